package httphost_test

import (
	"testing"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/lab/flood"
)

// The claim that load alone never opens the door, for the file store under
// a pool of workers and under CGI, with the default fail policy (open):
// exactly the limit allowed, no hit let through uncounted, however fast
// one address sends (package flood): a lock not free within the lock wait
// is load, refused as busy (ratelab.ErrBusy), never let through. The
// stores that need a server run the same check in the packages that
// register them, beside the findings it pins there.
func TestLoadIsNotAnOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("floods a pool and CGI with requests; skipped with -short")
	}
	exe := flood.Binary(t)
	for _, m := range []harness.Model{harness.Pool, harness.CGI} {
		t.Run("file/"+string(m), func(t *testing.T) {
			flood.Check(t, harness.App{Store: harness.File, Dir: t.TempDir()}, m, 4, exe)
		})
	}
}
