package breaker_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/breaker"
)

// pinger is a store's Ping that the test answers one call at a time: the
// next call is the sign that the watcher has judged the last one.
type pinger struct{ calls chan chan error }

func (p pinger) Ping(ctx context.Context) error {
	answer := make(chan error)
	select {
	case p.calls <- answer:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-answer:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watch starts b's watcher with w, its pings the returned pinger's, until
// the test ends.
func watch(t *testing.T, b *breaker.Breaker, w breaker.Watch) pinger {
	p := pinger{calls: make(chan chan error)}
	w.Ping = p.Ping
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Watch(ctx, w)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

// next waits for the watcher's next ping.
func (p pinger) next(t *testing.T) chan error {
	t.Helper()
	select {
	case a := <-p.calls:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher sent no ping")
		return nil
	}
}

// The breaker opens after Trips pings in a row go unanswered, not after
// fewer, and closes at the first answer; a reader of the shared state
// sees each change by the next ping.
func TestWatchOpensAfterTripsInARowAndClosesOnAnAnswer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "breaker")
	watcher, err := breaker.Create(path)
	require.NoError(t, err)
	t.Cleanup(func() { watcher.Close() })
	reader, err := breaker.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { reader.Close() })

	p := watch(t, watcher, breaker.Watch{Every: time.Millisecond, Trips: 3, Log: slog.New(slog.DiscardHandler)})

	hung := errors.New("no answer")
	ping := p.next(t)
	for i, tt := range []struct {
		answer error
		down   bool
	}{
		{hung, false}, {hung, false}, {nil, false}, // two, then an answer: the count starts again
		{hung, false}, {hung, false}, {hung, true}, // three in a row
		{hung, true}, {nil, false},
	} {
		ping <- tt.answer
		ping = p.next(t) // the last one is judged
		assert.Equal(t, tt.down, watcher.Down(), "ping %d (%v): the watcher's state", i+1, tt.answer)
		assert.Equal(t, tt.down, reader.Down(), "ping %d (%v): another process's state", i+1, tt.answer)
	}
}

// A ping this process could not send, out of file descriptors (EMFILE,
// ENFILE), says nothing of the store: it never opens the breaker, and an
// open breaker closes on it, so that hits go to the store and are refused
// as busy if they cannot reach it either. Clients that held the front's
// connections open kept the breaker open after Redis came back, and every
// hit was let through uncounted under fail-open (the attacker's finding
// at 4a9c528).
func TestAPingOutOfDescriptorsIsNoEvidence(t *testing.T) {
	b := breaker.New()
	p := watch(t, b, breaker.Watch{Every: time.Millisecond, Trips: 2, Quiet: time.Nanosecond, Log: slog.New(slog.DiscardHandler)})

	hung := errors.New("no answer")
	emfile := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.EMFILE)}
	ping := p.next(t)
	for i, tt := range []struct {
		answer error
		down   bool
	}{
		{emfile, false}, {emfile, false}, {emfile, false}, // never evidence of a hung store
		{hung, false}, {emfile, false}, {hung, false}, // nor does it count among the unanswered
		{hung, true},    // two in a row: open
		{emfile, false}, // out of descriptors: closed, the hits judge
		{hung, false}, {hung, true}, {nil, false},
	} {
		ping <- tt.answer
		ping = p.next(t)
		assert.Equal(t, tt.down, b.Down(), "ping %d (%v)", i+1, tt.answer)
	}
}

// store is a Store whose every hit returns err, counting the hits.
type store struct {
	err  error
	hits int
}

func (s *store) TakeAt(_ context.Context, r ratelab.Rule, _ string, _ time.Time) (ratelab.Decision, error) {
	s.hits++
	return ratelab.Decision{Rule: r, Allowed: true, Remaining: 1}, s.err
}

type decided struct{ error }

func (d decided) Unwrap() error { return d.error }

func (decided) Decided() ratelab.Decision { return ratelab.Decision{Allowed: true} }

// Under Wrap, an open breaker decides a hit without the store, as an
// error the fail policy decides (not ErrBusy); a hit that ran out of time
// while the breaker opened becomes one too, and says it may have been
// counted; with the breaker closed, the store's answer and error pass
// unchanged, ErrBusy included; a decision the store could not confirm
// keeps it.
func TestWrapDecidesByTheBreaker(t *testing.T) {
	busy := errors.Join(ratelab.ErrBusy, errors.New("statement timed out"))
	for _, tt := range []struct {
		name         string
		down         bool
		err          error
		hits         int
		want         error // the error returned wraps it
		notBusy      bool
		maybeCounted bool
	}{
		{name: "closed, answered", hits: 1},
		{name: "closed, busy", err: busy, hits: 1, want: ratelab.ErrBusy},
		{name: "open: the store is not asked", down: true, want: breaker.ErrDown, notBusy: true},
		{name: "open, a conflict passes", down: true, err: ratelab.ErrRuleConflict, want: breaker.ErrDown, notBusy: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := breaker.New()
			breaker.SetDown(b, tt.down)
			s := &store{err: tt.err}
			_, err := breaker.Wrap(s, b).TakeAt(context.Background(), ratelab.Rule{}, "k", time.Now())
			assert.Equal(t, tt.hits, s.hits, "hits that reached the store")
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tt.want)
			assert.ErrorIs(t, err, ratelab.ErrUnavailable)
			if tt.notBusy {
				assert.NotErrorIs(t, err, ratelab.ErrBusy)
			}
		})
	}
}

// opening is a store whose hit fails with err while the breaker opens.
type opening struct {
	b   *breaker.Breaker
	err error
}

func (o opening) TakeAt(context.Context, ratelab.Rule, string, time.Time) (ratelab.Decision, error) {
	breaker.SetDown(o.b, true)
	return ratelab.Decision{}, o.err
}

// A hit that ran out of time while the breaker opened is decided by the
// policy — not refused as load — and may have been counted: it reached
// the store. A hit the store decided but could not confirm keeps its
// decision; a conflict between rules is not an outage.
func TestAHitThatFailedAsTheBreakerOpenedIsTheBreakers(t *testing.T) {
	busy := errors.Join(ratelab.ErrBusy, errors.New("statement timed out"))
	b := breaker.New()
	_, err := breaker.Wrap(opening{b, busy}, b).TakeAt(context.Background(), ratelab.Rule{}, "k", time.Now())
	require.ErrorIs(t, err, breaker.ErrDown)
	assert.NotErrorIs(t, err, ratelab.ErrBusy, "the policy decides it")
	var m interface{ MaybeCounted() bool }
	require.ErrorAs(t, err, &m)
	assert.True(t, m.MaybeCounted(), "it reached the store: %v", err)
	assert.Contains(t, err.Error(), "statement timed out", "the store's own error is in the message")

	for _, keep := range []error{decided{ratelab.ErrUnavailable}, ratelab.ErrRuleConflict} {
		b := breaker.New()
		_, err := breaker.Wrap(opening{b, keep}, b).TakeAt(context.Background(), ratelab.Rule{}, "k", time.Now())
		assert.Equal(t, keep, err, "an error the breaker leaves as it is")
	}
}

// A ping can go unanswered under load — the watcher's own process, a
// front taking a flood, waits its turn for the CPU — while the store
// answers hits: that store is slow, not hung, and the breaker stays
// closed however many pings fail, so that sending fast never opens the
// door under fail-open. Evidence of life is a hit answered within Quiet,
// recorded by any process through the shared state; without it, or once
// it is older than Quiet, failed pings open the breaker as before.
func TestAStoreThatAnswersHitsIsNotHung(t *testing.T) {
	for _, tt := range []struct {
		name     string
		quiet    time.Duration
		answered bool
		down     bool
		future   bool // the answer recorded two hours ahead of the clock
	}{
		{"a hit answered within Quiet", time.Hour, true, false, false},
		{"no hit answered", time.Hour, false, true, false},
		{"the last answer older than Quiet", time.Nanosecond, true, true, false},
		// The attacker's finding: a timestamp far ahead (a clock stepped
		// back, a file written by hand) kept the breaker closed on a hung
		// store.
		{"an answer from the future", time.Hour, false, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "breaker")
			watcher, err := breaker.Create(path)
			require.NoError(t, err)
			t.Cleanup(func() { watcher.Close() })
			worker, err := breaker.Open(path) // another process's view, which records its hits
			require.NoError(t, err)
			t.Cleanup(func() { worker.Close() })
			if tt.answered {
				_, err := breaker.Wrap(&store{}, worker).TakeAt(context.Background(), ratelab.Rule{}, "k", time.Time{})
				require.NoError(t, err)
			}
			if tt.future {
				worker.Answered(time.Now().Add(2 * time.Hour))
			}

			p := watch(t, watcher, breaker.Watch{Every: time.Millisecond, Trips: 2, Quiet: tt.quiet, Log: slog.New(slog.DiscardHandler)})
			ping := p.next(t)
			for range 4 { // twice Trips
				ping <- errors.New("no answer")
				ping = p.next(t)
			}
			assert.Equal(t, tt.down, watcher.Down(), "the watcher's state after four pings unanswered")
			assert.Equal(t, tt.down, worker.Down(), "the worker's")
		})
	}
}
