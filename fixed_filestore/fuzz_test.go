//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/lab/storetest"
)

var stateFile = regexp.MustCompile(`^[0-9a-f]{64}(\.sliding|\.log|\.gcra)?\.json$`)

// Any key — traversal attempts, separators, NUL, huge — names a file of
// fixed shape directly inside the state directory, and a key names the
// same file every time.
func FuzzKeyPath(f *testing.F) {
	for _, seed := range []string{"demo-start:ip:203.0.113.7", "../../etc/passwd", "a/b\\c", "\x00", "", strings.Repeat("k", 5000), "ip:2001:db8::1"} {
		f.Add(seed)
	}
	base := f.TempDir()
	s, err := fixedfilestore.New(base, fixedfilestore.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key string) {
		for _, a := range ratelab.Algorithms() {
			r := storetest.Checked(ratelab.Rule{Name: "demo-start", Limit: 30, Window: time.Hour, Algorithm: a})
			p := s.Path(r, key)
			if filepath.Dir(p) != s.Dir() || !stateFile.MatchString(filepath.Base(p)) {
				t.Fatalf("key %q gave path %q outside %s or of the wrong shape", key, p, s.Dir())
			}
			if s.Path(r, key) != p {
				t.Fatalf("key %q gave two paths", key)
			}
			if fixedfilestore.FileName(r, key) != filepath.Base(p) {
				t.Fatalf("FileName and Path disagree for %q", key)
			}
		}
	})
}
