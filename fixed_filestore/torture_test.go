//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/internal/syncbuf"
	"github.com/ratelab/ratelab/lab/storetest"
	"github.com/ratelab/ratelab/lab/stress"
)

// The package's child processes are this test binary, re-executed with
// one of these roles before any test runs.
func TestMain(m *testing.M) {
	roles := childproc.Roles{
		"crash/hitter":   crashChild,
		"writable/check": writableChild,
	}
	for _, role := range []string{"torture/hitter", "torture/holder", "torture/sweeper"} {
		roles[role] = func() error { return tortureChild(role) }
	}
	childproc.RunIfChild(roles)
	os.Exit(m.Run())
}

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

func tortureChild(role string) error {
	stdin := bufio.NewReader(os.Stdin)
	base := os.Getenv("T_BASE")
	switch role {
	case "torture/hitter":
		opts := fixedfilestore.Options{LockWait: time.Minute, Logger: slog.New(slog.DiscardHandler)}
		if w := os.Getenv("T_WAIT"); w != "" {
			opts.LockWait, _ = time.ParseDuration(w)
		}
		raw, err := fixedfilestore.New(base, opts)
		if err != nil {
			return err
		}
		policy := map[string]ratelab.FailPolicy{"closed": ratelab.FailClosed}[os.Getenv("T_POLICY")]
		s := storetest.WithPolicy(raw, policy, opts.Logger)
		r := rule
		r.Limit = int64(envInt("T_LIMIT"))
		l, err := ratelab.NewLimiter(s, r)
		if err != nil {
			return err
		}
		hits, keys := envInt("T_HITS"), max(envInt("T_KEYS"), 1)
		childproc.Say("ready")
		childproc.WaitGo(stdin)
		var allowed, throttled, notCounted, busy, failed int
		start := time.Now()
		var pulse childproc.Pulse // 500 hits can outlast childproc.Timeout on a busy machine
		for i := range hits {
			key := storetest.Key
			if keys > 1 {
				key = fmt.Sprintf("key-%d", i%keys)
			}
			d, err := l.AllowAt(context.Background(), key, t0)
			switch {
			case errors.Is(err, ratelab.ErrBusy):
				busy++
			case err != nil:
				failed++
			case d.Source != ratelab.Shared:
				notCounted++
			case d.Allowed:
				allowed++
			default:
				throttled++
			}
			pulse.Beat()
		}
		childproc.Say("result allowed=%d throttled=%d notcounted=%d busy=%d failed=%d ms=%d",
			allowed, throttled, notCounted, busy, failed, time.Since(start).Milliseconds())
	case "torture/holder":
		f, err := os.OpenFile(os.Getenv("T_PATH"), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			return err
		}
		childproc.Say("locked")
		childproc.WaitGo(stdin)
	case "torture/sweeper":
		s, err := fixedfilestore.New(base, fixedfilestore.Options{})
		if err != nil {
			return err
		}
		stop := make(chan struct{})
		go func() { stdin.ReadString('\n'); close(stop) }()
		childproc.Say("ready")
		removed, rounds := 0, 0
		for {
			select {
			case <-stop:
				childproc.Say("result removed=%d rounds=%d", removed, rounds)
				return nil
			default:
			}
			report, err := s.SweepAt(t0) // the hitters' clock: their windows are live, the planted ones over
			if err != nil {
				return err
			}
			for _, e := range report {
				if e.Action == fixedfilestore.Removed {
					removed++
				}
			}
			rounds++
		}
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	return nil
}

type hitterResult struct{ allowed, throttled, notCounted, busy, failed, ms int }

// startHitters starts n hitters, held at the barrier.
func startHitters(t *testing.T, n int, env ...string) *stress.Group {
	t.Helper()
	g, err := stress.Start("torture/hitter", n, env...)
	require.NoError(t, err)
	t.Cleanup(g.Kill)
	return g
}

func goAll(t *testing.T, gs ...*stress.Group) {
	t.Helper()
	for _, g := range gs {
		require.NoError(t, g.Go())
	}
}

func collect(t *testing.T, g *stress.Group) []hitterResult {
	t.Helper()
	lines, _, err := g.Results()
	require.NoError(t, err)
	var out []hitterResult
	for _, line := range lines {
		var r hitterResult
		_, err = fmt.Sscanf(line, "allowed=%d throttled=%d notcounted=%d busy=%d failed=%d ms=%d", &r.allowed, &r.throttled, &r.notCounted, &r.busy, &r.failed, &r.ms)
		require.NoError(t, err, line)
		out = append(out, r)
	}
	return out
}

func readCount(t *testing.T, base, key string) int64 {
	t.Helper()
	s, _ := newStoreAt(t, base, fixedfilestore.Options{})
	b, err := os.ReadFile(s.Path(rule, key))
	require.NoError(t, err)
	st, err := algorithm.DecodeFixed(b)
	require.NoError(t, err)
	return st.Count
}

// 16 processes × 500 hits on one key, released together: every hit is
// counted and exactly 8000 − limit are throttled.
func TestTortureSixteenProcesses(t *testing.T) {
	base := t.TempDir()
	ps := startHitters(t, 16, "T_BASE="+base, "T_LIMIT=30", "T_HITS=500")
	goAll(t, ps)
	var allowed, throttled int
	for _, r := range collect(t, ps) {
		require.Zero(t, r.notCounted+r.busy+r.failed)
		allowed, throttled = allowed+r.allowed, throttled+r.throttled
	}
	assert.Equal(t, 30, allowed)
	assert.Equal(t, 8000-30, throttled)
	assert.Equal(t, int64(8000), readCount(t, base, storetest.Key))
}

func startHolder(t *testing.T, path string) *childproc.Proc {
	t.Helper()
	h, err := childproc.Start("holder", "torture/holder", "T_PATH="+path)
	require.NoError(t, err)
	t.Cleanup(h.Kill)
	_, err = h.Expect("locked")
	require.NoError(t, err)
	return h
}

// A holder SIGKILLed with the lock: the waiters go on within 100 ms and no
// hit is lost.
func TestTortureKilledHolder(t *testing.T) {
	base := t.TempDir()
	s, _ := newStoreAt(t, base, fixedfilestore.Options{})
	for range 7 {
		hit(t, s, t0)
	}
	holder := startHolder(t, s.Path(rule, storetest.Key))
	ps := startHitters(t, 4, "T_BASE="+base, "T_LIMIT=30", "T_HITS=1")
	goAll(t, ps)
	require.True(t, ps.Quiet(50*time.Millisecond), "a waiter finished while the lock was held")
	killed := time.Now()
	require.NoError(t, holder.Cmd.Process.Signal(syscall.SIGKILL))
	results := collect(t, ps)
	waited := time.Since(killed)
	for _, r := range results {
		assert.Equal(t, hitterResult{allowed: 1, ms: r.ms}, r)
	}
	// Each was allowed, not refused as busy: the kill, not the end of its
	// wait, let it go on. How soon is the machine's to say (a busy one took
	// 125 ms where a quiet one takes a few): bounded by the wait alone.
	assert.Less(t, waited, fixedfilestore.DefaultLockWait, "waiters go on when the holder dies, before their wait runs out")
	assert.Equal(t, int64(11), readCount(t, base, storetest.Key), "7 before, 4 after: nothing lost")
}

// A holder SIGSTOPped with the lock: waiters give up at the bounded wait
// and are refused as busy under either policy — a hung holder cannot be
// told from a long queue — and after SIGCONT everything recovers.
func TestTortureStoppedHolder(t *testing.T) {
	base := t.TempDir()
	s, _ := newStoreAt(t, base, fixedfilestore.Options{})
	hit(t, s, t0)
	holder := startHolder(t, s.Path(rule, storetest.Key))
	require.NoError(t, holder.Cmd.Process.Signal(syscall.SIGSTOP))

	open := startHitters(t, 2, "T_BASE="+base, "T_LIMIT=30", "T_HITS=1", "T_WAIT=200ms", "T_POLICY=open")
	closed := startHitters(t, 2, "T_BASE="+base, "T_LIMIT=30", "T_HITS=1", "T_WAIT=200ms", "T_POLICY=closed")
	goAll(t, open, closed)
	for _, r := range append(collect(t, open), collect(t, closed)...) {
		assert.Equal(t, hitterResult{busy: 1, ms: r.ms}, r, "refused as busy (the middleware answers 503), under fail-open too")
		assert.GreaterOrEqual(t, r.ms, 200, "gave up at the bounded wait, not before")
		assert.Less(t, r.ms, 2000)
	}

	require.NoError(t, holder.Cmd.Process.Signal(syscall.SIGCONT))
	require.NoError(t, holder.Close()) // it releases the lock and exits
	h := hit(t, s, t0)
	assert.Equal(t, ratelab.Shared, h.Source)
	assert.Equal(t, int64(2), count(h), "recovered: the stopped holder's wait lost nothing else")
}

// A sweep in a loop while 8 processes hit 50 keys whose old windows are
// long over: the sweep races every key's first hit, and no hit is lost.
func TestTortureSweepLoop(t *testing.T) {
	base := t.TempDir()
	s, _ := newStoreAt(t, base, fixedfilestore.Options{})
	old := time.Now().Add(-3 * time.Hour)
	for k := range 50 {
		key := fmt.Sprintf("key-%d", k)
		require.NoError(t, os.WriteFile(s.Path(rule, key), algorithm.Fixed{Count: 99, ResetAt: t0.Unix() - 7200}.Append(nil), 0o600))
		age(t, s.Path(rule, key), old)
	}
	sweeper, err := childproc.Start("sweeper", "torture/sweeper", "T_BASE="+base)
	require.NoError(t, err)
	t.Cleanup(sweeper.Kill)
	_, err = sweeper.Expect("ready")
	require.NoError(t, err)

	ps := startHitters(t, 8, "T_BASE="+base, "T_LIMIT=1000", "T_HITS=500", "T_KEYS=50")
	goAll(t, ps)
	for _, r := range collect(t, ps) {
		require.Zero(t, r.notCounted+r.busy+r.failed)
	}
	require.NoError(t, sweeper.Send("stop"))
	line, err := sweeper.Expect("result ")
	require.NoError(t, err)
	require.NoError(t, sweeper.Close())
	t.Logf("sweeper: %s", line)
	for k := range 50 {
		assert.Equal(t, int64(80), readCount(t, base, fmt.Sprintf("key-%d", k)), "key-%d: 8 processes × 10 hits", k)
	}
}

// Corrupted state while traffic flows: garbage, truncation, a huge file, a
// directory or a symlink where the state belongs. No panic; corrupt files
// are logged and replaced; a directory or symlink fails the hit by policy;
// once the state path is sane again, counting goes on.
func TestTortureCorruptionUnderTraffic(t *testing.T) {
	base := t.TempDir()
	target := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(target, []byte("precious"), 0o600))
	var logs syncbuf.Buffer
	opts := fixedfilestore.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), LockWait: time.Second}
	s, err := fixedfilestore.New(base, opts)
	require.NoError(t, err)
	path := s.Path(rule, storetest.Key)

	var stop atomic.Bool
	var counted, notCounted atomic.Int64
	var causes syncbuf.Buffer // why hits were not counted, one a line (the log holds repeats back)
	var wg sync.WaitGroup
	for range 4 {
		raw, err := fixedfilestore.New(base, opts)
		require.NoError(t, err)
		hs := storetest.WithPolicy(raw, ratelab.FailOpen, opts.Logger)
		wg.Go(func() {
			for !stop.Load() {
				h, err := hs.TakeAt(context.Background(), rule, storetest.Key, t0)
				if err != nil {
					t.Errorf("fail-open store returned an error: %v", err)
					return
				}
				if h.Source != ratelab.Shared {
					notCounted.Add(1)
					fmt.Fprintln(&causes, h.Cause)
				} else {
					counted.Add(1)
				}
			}
		})
	}
	replaced := func() int64 { return int64(strings.Count(logs.String(), "corrupt state replaced")) }
	corruptions := []struct {
		apply func() error
		met   func() int64 // grows once a hit has met the corruption
	}{
		{func() error { return os.WriteFile(path, []byte("\x00garbage\xff"), 0o600) }, replaced},
		{func() error { return os.WriteFile(path, []byte(`{"count":12,"res`), 0o600) }, replaced}, // truncated
		{func() error { return os.WriteFile(path, make([]byte, 1<<20), 0o600) }, replaced},
		{func() error { os.Remove(path); return os.Mkdir(path, 0o700) }, notCounted.Load},
		{func() error { os.Remove(path); return os.Symlink(target, path) }, notCounted.Load},
	}
	for round := range 20 {
		c := corruptions[round%len(corruptions)]
		// Traffic recreates or rewrites the file at any moment, so a
		// corruption may need a few attempts to land and be met.
		require.NoError(t, meet(c.apply, c.met), "round %d", round)
		require.NoError(t, retry(func() error { return os.RemoveAll(path) }))
	}
	stop.Store(true)
	wg.Wait()

	assert.Positive(t, counted.Load())
	assert.Positive(t, notCounted.Load(), "a directory or symlink at the state path must fail open")
	assert.Contains(t, logs.String(), "corrupt state replaced")
	assert.Contains(t, causes.String(), "refusing to follow")
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "precious", string(got), "nothing was written through the symlink")
	hit(t, s, t0)
	before := readCount(t, base, storetest.Key)
	hit(t, s, t0)
	assert.Equal(t, before+1, readCount(t, base, storetest.Key), "counting goes on")
}

// The base directory vanishes mid-run: fail-open lets hits through
// uncounted, fail-closed refuses them; when it is back, counting resumes.
// Four hitters run throughout; each phase — the directory gone, then back
// — lasts until the hitters have met it (a refused or uncounted hit, then
// a counted one), five times over, however slowly the machine runs them.
func TestTortureBaseVanishes(t *testing.T) {
	for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed} {
		t.Run(policy.String(), func(t *testing.T) {
			base := filepath.Join(t.TempDir(), "var")
			require.NoError(t, os.Mkdir(base, 0o700))
			s, _ := newGuardedAt(t, base, policy, fixedfilestore.Options{})
			var stop atomic.Bool
			var ok, refused, uncounted atomic.Int64
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for !stop.Load() {
						h, err := s.TakeAt(context.Background(), rule, storetest.Key, t0)
						switch {
						case errors.Is(err, ratelab.ErrUnavailable):
							refused.Add(1)
						case err != nil:
							t.Errorf("unexpected error: %v", err)
							return
						case h.Source != ratelab.Shared:
							uncounted.Add(1)
						default:
							ok.Add(1)
						}
					}
				})
			}
			failed := &refused
			if policy == ratelab.FailOpen {
				failed = &uncounted
			}
			for range 5 {
				require.NoError(t, retry(func() error { return os.RemoveAll(base) }))
				require.NoError(t, grows(failed), "hits while the directory is gone")
				require.NoError(t, os.Mkdir(base, 0o700))
				require.NoError(t, grows(&ok), "hits once it is back")
			}
			stop.Store(true)
			wg.Wait()
			if policy == ratelab.FailOpen {
				assert.Zero(t, refused.Load())
			} else {
				assert.Zero(t, uncounted.Load())
			}
			h := hit(t, s, t0)
			assert.Equal(t, ratelab.Shared, h.Source, "recovered")
		})
	}
}

// meet applies a corruption until a hit meets it — met grows — trying
// again when traffic overwrote it first, for at most a minute.
func meet(apply func() error, met func() int64) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		was := met()
		if err := retry(apply); err != nil {
			return err
		}
		if grown(met, was, 50*time.Millisecond) == nil {
			return nil
		}
	}
	return errors.New("no hit met the corruption in a minute")
}

// grows waits until n is larger than it is now: a hit of the kind n
// counts has been decided since.
func grows(n *atomic.Int64) error { return grown(n.Load, n.Load(), time.Minute) }

// grown waits at most limit for get to return other than was.
func grown(get func() int64, was int64, limit time.Duration) error {
	return poll.Until(limit, time.Millisecond, func() error {
		if get() == was {
			return errors.New("not yet")
		}
		return nil
	})
}

// retry runs f until it succeeds, at most 1000 times, for file operations
// that race with traffic on purpose.
func retry(f func() error) error {
	var err error
	for range 1000 {
		if err = f(); err == nil {
			return nil
		}
	}
	return err
}
