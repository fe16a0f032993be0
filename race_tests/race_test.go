//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/internal/seqchart"
	"github.com/ratelab/ratelab/lab/stress"
	racetests "github.com/ratelab/ratelab/race_tests"
)

var (
	procs = flag.Int("procs", 8, "stress: processes")
	hits  = flag.Int("hits", 500, "stress: hits per process")
)

// Every child process is this test binary, re-executed: the role is
// run here, before m.Run, by childproc.RunIfChild with this package's roles.
func TestMain(m *testing.M) {
	childproc.RunIfChild(racetests.Roles(), stress.Roles())
	os.Exit(m.Run())
}

func TestLostUpdate(t *testing.T) {
	r, err := racetests.LostUpdate(t.TempDir(), false)
	require.NoError(t, err)
	assert.Equal(t, "2 hits → count 1 (1 lost)", r.Observed)
	assert.Equal(t, "A read 0, B read 0", r.Detail)
	assert.True(t, r.Pass())

	r, err = racetests.LostUpdate(t.TempDir(), true)
	require.NoError(t, err)
	assert.Equal(t, "2 hits → count 2 (0 lost)", r.Observed)
	assert.Equal(t, "A read 0, B read 1", r.Detail, "with flock B reads after A wrote")
	assert.True(t, r.Pass())
}

func TestTornRead(t *testing.T) {
	tests := []struct {
		order racetests.WriteOrder
		lock  bool
		want  string
	}{
		{racetests.TruncateFirst, false, "B reads 0, counts 1 (window restarted)"},
		{racetests.WriteThenTruncate, false, "B reads 6, counts 7"},
		{racetests.TruncateFirst, true, "B reads 6, counts 7"},
		{racetests.WriteThenTruncate, true, "B reads 6, counts 7"},
	}
	for _, tt := range tests {
		r, err := racetests.TornRead(t.TempDir(), tt.order, tt.lock)
		require.NoError(t, err)
		assert.Equal(t, tt.want, r.Observed, "%s lock=%v", tt.order, tt.lock)
		assert.True(t, r.Pass(), r.Case)
	}
}

func TestLockFilePitfalls(t *testing.T) {
	r, err := racetests.UnlinkAfterUnlock(t.TempDir(), true)
	require.NoError(t, err)
	assert.Equal(t, "2 holders at once", r.Observed, "unlink after unlock")
	r, err = racetests.UnlinkAfterUnlock(t.TempDir(), false)
	require.NoError(t, err)
	assert.Equal(t, "1 holder at once", r.Observed, "keep the lock file")

	r, err = racetests.ReplaceByRename(t.TempDir(), true)
	require.NoError(t, err)
	assert.Equal(t, "2 holders at once", r.Observed, "rename over a locked file")
	r, err = racetests.ReplaceByRename(t.TempDir(), false)
	require.NoError(t, err)
	assert.Equal(t, "1 holder at once", r.Observed, "write in place")
}

func TestHolderKilled(t *testing.T) {
	r, wait, err := racetests.HolderKilled(t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, "B goes on, count 6 (0 lost)", r.Observed)
	// Milliseconds in practice; the bound is loose because CI machines are
	// shared. The demo prints the real figure.
	assert.Less(t, wait, 2*time.Second)
	t.Logf("waiter went on %v after the kill", wait)
}

// The flock run is exact on every run; the lock-free runs are reported.
func TestStress(t *testing.T) {
	for _, mode := range racetests.StressModes() {
		s, err := racetests.Stress(t.TempDir(), mode, *procs, *hits)
		require.NoError(t, err, mode)
		t.Logf("%-26s %d × %d: counted %d of %d, lost %d, %.0f hits/s", mode, s.Procs, s.Hits, s.Counted, s.Expected, s.Lost(), s.HitsPerSecond())
		assert.LessOrEqual(t, s.Counted, s.Expected, "%s counted more hits than were made", mode)
		if mode == "flock" {
			assert.Equal(t, s.Expected, s.Counted, "fixed_filestore must count every hit")
		}
	}
}

func TestDemoReport(t *testing.T) {
	rep, err := racetests.Demo(t.TempDir(), 2, 50, nil)
	require.NoError(t, err)
	assert.True(t, rep.Pass())
	var out strings.Builder
	rep.Print(&out, false)
	assert.NotContains(t, out.String(), "FAIL")
	assert.Contains(t, out.String(), "unlink lock file after unlock")

	// A claim that does not hold must fail the report.
	rep.Results[0].Observed = "something else"
	assert.False(t, rep.Pass())
}

// The store against a paused hit: with its lock, B waits, gives up and is
// told so; nothing it was told is lost.
func TestPausedHit(t *testing.T) {
	r, err := racetests.PausedHit(t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, "B waited, gave up (503); count 6, 0 lost", r.Observed)
	assert.True(t, r.Pass())
}

// The four sequence diagrams in docs/figures are what a run records now;
// inodes are numbered in order of appearance, so every run draws the same.
func TestFiguresAreFresh(t *testing.T) {
	figs, err := racetests.Figures(t.TempDir())
	require.NoError(t, err)
	require.Len(t, figs, 4)
	for _, f := range figs {
		var b bytes.Buffer
		require.NoError(t, seqchart.Write(&b, f.Chart))
		got, err := os.ReadFile(filepath.Join("..", "docs", "figures", f.Name))
		require.NoError(t, err, "run make figures")
		assert.True(t, bytes.Equal(got, b.Bytes()), "docs/figures/%s is stale: run make figures", f.Name)
	}
}
