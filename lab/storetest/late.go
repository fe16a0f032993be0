package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/internal/syncbuf"
)

// late checks the finding of a phantom count: a hit whose statement
// reached a stopped server, and whose client gave up and reported it
// failed, was counted when the server resumed. The statement must see
// that its deadline has passed and change nothing.
//
// Only that hit has the tight timeout (300 ms): the tables, the count
// before it and the connection it is sent on are made by a store with time
// to spare on the same pool, and so is the count after it — on a busy
// machine, PostgreSQL's login alone outlasted 300 ms.
func late(t *testing.T, d Database) {
	open := d.Connect(t, d.DSN, 30*time.Second)
	o := Options{Prefix: fmt.Sprintf("t%d_", prefixes.Add(1)), Timeout: 30 * time.Second, Policy: ratelab.FailClosed}
	roomy := open(o)
	o.Timeout = 300 * time.Millisecond
	tight := open(o)
	require.NoError(t, roomy.CheckServer(context.Background()))
	Take(t, roomy, Original, Key, T0) // count 1, and a connection idle in the pool
	resume, err := d.Pause()
	require.NoError(t, err)
	t.Cleanup(func() { resume() })                                 // if the test stops early
	_, err = tight.TakeAt(context.Background(), Original, Key, T0) // sent, and waiting in the kernel
	require.NoError(t, resume())
	require.ErrorIs(t, err, ratelab.ErrUnavailable, "the hit was reported failed")
	// The client dropped its connection; the server reads the statement
	// still in its buffer, runs it, and only then sees the connection is
	// gone. Once no session but the checker's is left, it is done.
	require.NoError(t, poll.Until(10*time.Second, 20*time.Millisecond, func() error {
		if n := d.Sessions(t, d.DSN); n > 0 {
			return fmt.Errorf("%d sessions left", n)
		}
		return nil
	}))
	after := Take(t, roomy, Original, Key, T0)
	assert.Equal(t, int64(28), after.Remaining, "count 2: the hit reported failed was not counted")
}

// ctxEnds checks that a hit ends when its caller's context does, the
// server stopped, under every algorithm: neither the store's timeout nor
// the connection's (5 s each) is what ends it.
func ctxEnds(t *testing.T, d Database) {
	open := d.Connect(t, d.DSN, 5*time.Second)
	s := open(Options{Prefix: fmt.Sprintf("t%d_", prefixes.Add(1)), Timeout: 5 * time.Second, Policy: ratelab.FailClosed})
	require.NoError(t, s.CheckServer(context.Background()))
	for _, a := range ratelab.Algorithms() {
		r := Checked(ratelab.Rule{Name: "ends", Limit: 10, Window: time.Hour, Algorithm: a})
		Take(t, s, r, Key, T0) // the row, and a connection idle in the pool
		resume, err := d.Pause()
		require.NoError(t, err)
		t.Cleanup(func() { resume() }) // if the test stops early
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		_, err = s.TakeAt(ctx, r, Key, T0)
		waited := time.Since(start)
		cancel()
		require.NoError(t, resume())
		assert.ErrorIs(t, err, context.DeadlineExceeded, "%s: the caller's context ended the hit", a)
		assert.Less(t, waited, 2*time.Second, "%s: a hit of a 100 ms context on a stopped server", a)
	}
}

// hostile checks rows that no rule could have written — a negative or
// huge count, a window that ends beyond any rule's, an undecodable state:
// the next hit replaces them with a fresh state, logs it, and is decided
// as the first hit of a window, under either policy; the hits after it
// count as usual.
func hostile(t *testing.T, d Database) {
	five := Checked(ratelab.Rule{Name: "five", Limit: 5, Window: time.Hour})
	fiveLog := five
	fiveLog.Algorithm = ratelab.SlidingLog
	far := T0.Add(400 * 24 * time.Hour).Unix()
	for _, c := range []struct {
		name  string
		rule  ratelab.Rule
		table string
		set   string
	}{
		{"negative count", five, "fixed", "count = -1000"},
		{"count past any limit", five, "fixed", fmt.Sprintf("count = %d", int64(1)<<40)},
		{"window beyond any rule's", five, "fixed", fmt.Sprintf("reset_at = %d", far)},
		{"the largest bigint", five, "fixed", "count = 9223372036854775807, reset_at = 9223372036854775807"},
		{"undecodable state", fiveLog, "state", "state = 'garbage'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			open := d.Connect(t, d.DSN, 5*time.Second)
			o := Options{Prefix: fmt.Sprintf("t%d_", prefixes.Add(1)), Timeout: 5 * time.Second,
				Policy: ratelab.FailClosed, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			s := open(o)
			require.NoError(t, s.CheckServer(context.Background()))
			Take(t, s, c.rule, Key, T0)
			d.Exec(t, d.DSN, fmt.Sprintf("UPDATE %s%s SET %s WHERE k = '%s'", o.Prefix, c.table, c.set, s.Key(c.rule, Key)))
			var got []bool
			for range 6 {
				got = append(got, Take(t, s, c.rule, Key, T0.Add(time.Second)).Allowed)
			}
			assert.Equal(t, []bool{true, true, true, true, true, false}, got, "allowed, from the hit after the row was spoiled")
			assert.Equal(t, 1, strings.Count(logs.String(), "replaced a corrupt state"), "one warning: %s", logs.String())
		})
	}
}

// full checks the finding that load opened the door: a server that turned
// connections away for want of free ones ("Too many connections") made
// every hit fail open. A fail-closed hit on a full server must wait its
// turn — the store says so in a debug line — and be decided once a slot is
// free, within its timeout.
func full(t *testing.T, d Database) {
	o := Options{Prefix: fmt.Sprintf("t%d_", prefixes.Add(1)), Timeout: 10 * time.Second, Policy: ratelab.FailClosed}
	require.NoError(t, d.Connect(t, d.DSN, 10*time.Second)(o).CheckServer(context.Background()))
	logs := &syncbuf.Buffer{}
	o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := d.Connect(t, d.DSN, 10*time.Second)(o) // a pool with no connection yet
	release := d.Fill(t, d.DSN)
	err := d.Connect(t, d.DSN, 10*time.Second)(o).CheckServer(context.Background())
	assert.ErrorIs(t, err, ratelab.ErrBusy, "a check turned away is load (serve and a CGI process say so)")
	type result struct {
		d   ratelab.Decision
		err error
	}
	done := make(chan result, 1)
	go func() {
		dec, err := s.TakeAt(context.Background(), Original, Key, T0)
		done <- result{dec, err}
	}()
	err = poll.Until(10*time.Second, 5*time.Millisecond, func() error {
		if !strings.Contains(logs.String(), "no free connection") {
			return errors.New("the hit has not been turned away yet")
		}
		return nil
	})
	release()
	require.NoError(t, err)
	got := <-done
	require.NoError(t, got.err, "a full server is load, not an outage")
	assert.True(t, got.d.Allowed)
	assert.Equal(t, ratelab.Shared, got.d.Source)
	assert.Equal(t, int64(28), Take(t, s, Original, Key, T0).Remaining, "the waiting hit was counted once")
}

// heldIsLoad checks the finding that sending fast opened the door: hits
// queued on one hot row — a sliding log's, on MariaDB — ran out of their
// time at the server, and fail-open let each through uncounted. A server
// that answers that it could not take a hit in time is busy, not gone:
// the hit is refused under fail-open (ratelab.ErrBusy, a 503) as under
// fail-closed, and decided in the process under fail-local. A row held by
// another transaction past the timeout makes the server say so.
func heldIsLoad(t *testing.T, d Database) {
	log := Checked(ratelab.Rule{Name: "held", Limit: 3, Window: time.Minute, Algorithm: ratelab.SlidingLog})
	for _, c := range []struct {
		rule  ratelab.Rule
		table string
	}{{Original, "fixed"}, {log, "state"}} {
		for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailLocal} {
			open := d.Connect(t, d.DSN, time.Second) // the server gives up 200 ms before the client
			o := Options{Prefix: fmt.Sprintf("t%d_", prefixes.Add(1)), Timeout: time.Second, Policy: policy,
				Logger: slog.New(slog.DiscardHandler)}
			s := open(o)
			require.NoError(t, s.CheckServer(context.Background()))
			// The row exists, made by a store with time to spare: a busy
			// machine (the suite beside two CPU-bound loops) took the
			// 1 s store past its deadline on this hit, held by nobody.
			roomy := d.Connect(t, d.DSN, 30*time.Second)(Options{Prefix: o.Prefix, Timeout: 30 * time.Second, Logger: o.Logger})
			require.NoError(t, roomy.CheckServer(context.Background()))
			Take(t, roomy, c.rule, Key, T0)
			release := d.Hold(t, d.DSN, o.Prefix+c.table, s.Key(c.rule, Key))
			dec, err := s.TakeAt(context.Background(), c.rule, Key, T0)
			release()
			if policy == ratelab.FailOpen {
				assert.ErrorIs(t, err, ratelab.ErrBusy, "%s, fail-open: a busy server's hit is refused", c.table)
				assert.False(t, dec.Allowed, "%s, fail-open", c.table)
			} else {
				require.NoError(t, err, "%s, fail-local", c.table)
				assert.Equal(t, ratelab.Local, dec.Source, "%s, fail-local: decided in this process", c.table)
			}
		}
	}
}

// greetedIsLoad checks the finding that sending fast opened the door under
// CGI: a process's one hit connected — the server answered its greeting —
// then ran out of its time at the client before the server answered the
// statement, and fail-open let it through uncounted (28 of 2000 hits,
// PostgreSQL under CGI, 200 at once on a busy two-core machine). A hit
// that runs out of its time is load, whatever it waited for: refused. A
// row held by another transaction keeps the statement waiting;
// the server's own bound (the pool's, 5 s) is past the hit's (300 ms).
func greetedIsLoad(t *testing.T, d Database) {
	for _, rule := range []ratelab.Rule{Original, Checked(ratelab.Rule{Name: "greeted", Limit: 3, Window: time.Minute, Algorithm: ratelab.SlidingLog})} {
		o := Options{Prefix: fmt.Sprintf("t%d_", prefixes.Add(1)), Timeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)}
		first := d.Connect(t, d.DSN, 5*time.Second)(o)
		require.NoError(t, first.CheckServer(context.Background()))
		Take(t, first, rule, Key, T0) // the row exists
		table := o.Prefix + "fixed"
		if rule.Normalized().Algorithm != ratelab.FixedWindow {
			table = o.Prefix + "state"
		}
		release := d.Hold(t, d.DSN, table, first.Key(rule, Key))
		o.Timeout = 300 * time.Millisecond
		s := d.Connect(t, d.DSN, 5*time.Second)(o) // a pool with no connection yet, as a CGI process has
		dec, err := s.TakeAt(context.Background(), rule, Key, T0)
		release()
		assert.ErrorIs(t, err, ratelab.ErrBusy, "%s: the server answered the hit's connection; fail-open refuses", rule.Algorithm)
		assert.False(t, dec.Allowed, "%s", rule.Algorithm)
	}
}

// silentIsLoad checks that a server that takes connections and never
// answers is refused as busy under fail-open, one hit at a time, 40 at
// once (more than a process's connections), and 40 hitters four hits
// each, one after another — where database/sql hands a hit the failed
// attempt its opener made for another, before the hit's own time is up
// (an attacker saw 16 of 1000 let through): a client cannot tell it from
// a server a flood keeps from answering, and a store that let these
// through would let a flood through. A newcomer found the store did both,
// depending on how many hits came at once and how a driver counted
// connections; the page now says which. A server the store cannot reach
// at all — "an outage follows the policy" — is an outage.
func silentIsLoad(t *testing.T, d Database) {
	addr := SilentServer(t)
	for _, c := range []struct{ n, each int }{{1, 1}, {40, 1}, {40, 4}} {
		n := c.n
		open := d.Connect(t, d.At(addr), 300*time.Millisecond)
		s := open(Options{Prefix: fmt.Sprintf("t%d_", prefixes.Add(1)), Timeout: 300 * time.Millisecond,
			Policy: ratelab.FailOpen, Logger: slog.New(slog.DiscardHandler)})
		var refused atomic.Int64
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				for range c.each {
					dec, err := s.TakeAt(context.Background(), Original, Key, T0)
					if !errors.Is(err, ratelab.ErrBusy) || dec.Allowed {
						t.Errorf("%d at once, %d each: got %+v, %v; want the hit refused as busy (ratelab.ErrBusy)", n, c.each, dec, err)
						return
					}
					refused.Add(1)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, int64(n*c.each), refused.Load(), "%d hitters, %d hits each, on a server that never answers", n, c.each)
	}
}

// SilentServer is a server that hangs — a Redis, a database: it accepts
// connections on loopback and never answers. It returns its address; the
// test's end closes it and every connection it accepted.
func SilentServer(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	closed := false
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		closed = true
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if closed { // accepted as the test ended
				c.Close()
			} else {
				conns = append(conns, c)
			}
			mu.Unlock()
		}
	}()
	return ln.Addr().String()
}

// droppedFollowsPolicy checks the other side of the rule: an error the
// server answers that is not about time — the table dropped under a
// running store — follows the fail policy, never refused as busy.
func droppedFollowsPolicy(t *testing.T, d Database) {
	for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed} {
		o := Options{Prefix: fmt.Sprintf("t%d_", prefixes.Add(1)), Timeout: 5 * time.Second, Policy: policy, Logger: slog.New(slog.DiscardHandler)}
		s := d.Connect(t, d.DSN, 5*time.Second)(o)
		require.NoError(t, s.CheckServer(context.Background()))
		d.Exec(t, d.DSN, "DROP TABLE "+o.Prefix+"fixed")
		dec, err := s.TakeAt(context.Background(), Original, Key, T0)
		assert.NotErrorIs(t, err, ratelab.ErrBusy, "%v: not about time", policy)
		if policy == ratelab.FailOpen {
			assert.NoError(t, err)
			assert.Equal(t, ratelab.Uncounted, dec.Source, "fail-open: let through, not counted")
		} else {
			assert.ErrorIs(t, err, ratelab.ErrUnavailable, "fail-closed")
		}
	}
}
