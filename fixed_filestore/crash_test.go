//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/lab/storetest"
)

// A crash case is a state built by hits at prep (offsets from t0, a whole
// minute), then one hit at crash that writes a shorter state, want, and is
// killed before it truncates the file; the hits that follow, one every
// 100 ms, are allowed or not as after says.
type crashCase struct {
	name  string
	rule  ratelab.Rule
	prep  []time.Duration
	crash time.Duration
	want  string
	after []bool
}

var crashCases = []crashCase{{
	// Two of the three instants leave the window: the log shrinks. Lost,
	// the next hits would find a fresh log and all be allowed.
	name:  "log",
	rule:  storetest.Checked(ratelab.Rule{Name: "crash-log", Limit: 3, Window: 10 * time.Second, Algorithm: ratelab.SlidingLog}),
	prep:  []time.Duration{0, time.Second, 9 * time.Second},
	crash: 11500 * time.Millisecond,
	want:  `{"window":10,"ts":[1783555209000,1783555211500]}`,
	after: []bool{true, false, false},
}, {
	// The window rolls over: 12 hits become the previous count, the
	// refused hit the first of the new window. Lost, the previous count
	// would no longer weigh and the next hits would be allowed.
	name:  "sliding roll-over",
	rule:  storetest.Checked(ratelab.Rule{Name: "crash-sliding", Limit: 10, Window: time.Minute, Algorithm: ratelab.SlidingCounter}),
	prep:  slices.Concat(slices.Repeat([]time.Duration{time.Second}, 100), slices.Repeat([]time.Duration{61 * time.Second}, 12)),
	crash: 121 * time.Second,
	want:  `{"window":60,"window_start":1783555320,"count":1,"prev_count":12}`,
	after: []bool{false, false},
}}

// crashChild takes the hit of crash case T_CASE and stops between its
// write and its truncate, saying so; the parent kills it there.
func crashChild() error {
	i := slices.IndexFunc(crashCases, func(c crashCase) bool { return c.name == os.Getenv("T_CASE") })
	if i < 0 {
		return fmt.Errorf("no crash case %q", os.Getenv("T_CASE"))
	}
	c := crashCases[i]
	s, err := fixedfilestore.New(os.Getenv("T_BASE"), fixedfilestore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	stdin := bufio.NewReader(os.Stdin)
	fixedfilestore.SetWrittenHook(func() {
		childproc.Say("written")
		childproc.WaitGo(stdin) // killed here
	})
	childproc.Say("ready")
	childproc.WaitGo(stdin)
	d, err := s.TakeAt(context.Background(), c.rule, storetest.Key, t0.Add(c.crash))
	childproc.Say("result allowed=%v err=%v: the hit never paused before its truncate", d.Allowed, err)
	return nil
}

// A hit SIGKILLed after it wrote a shorter state in place and before it
// truncated the file leaves a file that still decodes, to the state that
// hit wrote: the next hits neither find it corrupt nor lose its count.
func TestKilledBetweenWriteAndTruncate(t *testing.T) {
	for _, c := range crashCases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			s, logs := newStoreAt(t, base, fixedfilestore.Options{})
			for _, at := range c.prep {
				storetest.Take(t, s, c.rule, storetest.Key, t0.Add(at))
			}
			path := s.Path(c.rule, storetest.Key)
			old, err := os.ReadFile(path)
			require.NoError(t, err)

			killMidWrite(t, base, c.name)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Len(t, got, len(old), "the killed hit never truncated the file")
			assert.Equal(t, c.want, strings.TrimRight(string(got), " "), "the file holds the killed hit's state")

			for i, want := range c.after {
				at := t0.Add(c.crash + time.Duration(i+1)*100*time.Millisecond)
				d := storetest.Take(t, s, c.rule, storetest.Key, at)
				assert.Equal(t, want, d.Allowed, "hit %d after the kill", i+1)
			}
			assert.NotContains(t, logs.String(), "corrupt")
		})
	}
}

// killMidWrite runs crash case name's hit in a child and SIGKILLs it where
// it says it has written and not yet truncated, and reaps it.
func killMidWrite(t *testing.T, base, name string) {
	t.Helper()
	p, err := childproc.Start("crasher", "crash/hitter", "T_BASE="+base, "T_CASE="+name)
	require.NoError(t, err)
	t.Cleanup(p.Kill)
	_, err = p.Expect("ready")
	require.NoError(t, err)
	require.NoError(t, p.Send("go"))
	_, err = p.Expect("written")
	require.NoError(t, err)
	require.NoError(t, p.Cmd.Process.Signal(syscall.SIGKILL))
	p.Kill() // reaps it: the kernel has released its lock
}
