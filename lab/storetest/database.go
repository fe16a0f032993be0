package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/lab/sqlserver"
)

// Exact has 8 goroutines send 60 hits each to one key of s, for every
// algorithm under a limit (and burst) of 400, and fails unless exactly
// 400 are allowed: a store that loses or double-counts under contention
// shows it here.
func Exact(t *testing.T, s ratelab.Store) {
	for _, a := range ratelab.Algorithms() {
		r := Checked(ratelab.Rule{Name: "hot", Limit: 400, Window: time.Hour, Algorithm: a, Burst: 400})
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 60 {
					d, err := s.TakeAt(context.Background(), r, Key, T0)
					if err != nil || d.Source != ratelab.Shared {
						t.Error(err, d.Cause)
						return
					}
					if d.Allowed {
						allowed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		assert.Equal(t, int64(400), allowed.Load(), "%s: allowed of 480 hits at a limit of 400", a)
	}
}

// Sweeper is a store whose over states a sweep deletes in batches.
type Sweeper interface {
	ratelab.Store
	SweepAt(ctx context.Context, now time.Time) (int64, error)
}

// Sweep fills s with batch + 5 windows of the original rule, a sliding
// log and a live window, and checks that sweeps delete what is over — and
// nothing within MaxSkew of its end — and keep what is live.
func Sweep(t *testing.T, s Sweeper, batch int) {
	ctx := context.Background()
	for i := range batch + 5 {
		Take(t, s, Original, fmt.Sprint("old", i), T0)
	}
	log := Checked(ratelab.Rule{Name: "log", Limit: 3, Window: time.Minute, Algorithm: ratelab.SlidingLog})
	Take(t, s, log, "old", T0)
	Take(t, s, Original, "live", T0.Add(50*time.Minute))
	n, err := s.SweepAt(ctx, T0.Add(60*time.Minute+30*time.Second)) // the old windows ended at 60 min
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "only the log, full again at 1 min, is swept; no window within MaxSkew of its end")
	n, err = s.SweepAt(ctx, T0.Add(62*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, int64(batch+5), n)
	d := Take(t, s, Original, "live", T0.Add(62*time.Minute))
	assert.Equal(t, int64(28), d.Remaining, "the live window was kept")
}

// Options are what a database store's shared checks set on it.
type Options struct {
	Prefix  string // the tables' prefix; a fresh one gives fresh tables
	Policy  ratelab.FailPolicy
	Timeout time.Duration
	Logger  *slog.Logger
}

// DatabaseStore is a database store as its shared checks use it.
type DatabaseStore interface {
	Sweeper
	// CheckServer connects and creates the tables; refused settings are
	// an error wrapping the package's ErrRefused.
	CheckServer(ctx context.Context) error
	// Key is the primary key of the row of key under r.
	Key(r ratelab.Rule, key string) string
	// Ping asks the server for a sign of life (package breaker).
	Ping(ctx context.Context) error
}

// Database describes a database store and its private server to
// RunDatabase.
type Database struct {
	Pkg string // the package name its errors and logs start with
	// Connect opens the database at dsn (closed when t ends), and returns
	// a constructor of stores on it.
	Connect func(t testing.TB, dsn string, timeout time.Duration) func(Options) DatabaseStore
	// DSN is the private server's, at Addr (host:port, as it stands in
	// DSN); Unreachable names a port nobody listens on; WrongPassword and
	// MissingDB the server with a bad password and a database that does
	// not exist; NoTLS the server with TLS required, which it does not
	// offer; ReadOnly the server with sessions that take no writes.
	DSN, Addr, Unreachable, WrongPassword, MissingDB, NoTLS, ReadOnly string
	// At returns a DSN of DSN's user and database at another address.
	At        func(addr string) string
	Refused   error // the package's ErrRefused
	SweepSize int   // rows per DELETE of a sweep
	// Hold locks row k of table in a transaction of another connection
	// (SELECT … FOR UPDATE) and returns what rolls it back.
	Hold func(t testing.TB, dsn, table, k string) (release func())
	// Exec runs one statement, without arguments, on its own connection.
	Exec func(t testing.TB, dsn, q string)
	// Sessions counts the server's client sessions other than its own.
	Sessions func(t testing.TB, dsn string) int64
	// Fill opens connections to the server at dsn until it turns one
	// away for want of a free slot, keeps them, and returns what closes
	// them.
	Fill func(t testing.TB, dsn string) (release func())
	// Pause stops the server with SIGSTOP and returns what resumes it.
	Pause func() (resume func() error, err error)
}

var prefixes atomic.Int64

// BehindPolicy puts s behind o's fail policy and logger (WithPolicy),
// keeping its other methods: what a Database's Connect returns.
func BehindPolicy(s DatabaseStore, o Options) DatabaseStore {
	return policied{s, WithPolicy(s, o.Policy, cmp.Or(o.Logger, slog.Default()))}
}

type policied struct {
	DatabaseStore
	safe ratelab.Store
}

// Raw is the store behind s's policy, if BehindPolicy put one there.
func Raw(s ratelab.Store) ratelab.Store {
	if p, ok := s.(policied); ok {
		return p.DatabaseStore
	}
	return s
}

func (p policied) TakeAt(ctx context.Context, r ratelab.Rule, key string, now time.Time) (ratelab.Decision, error) {
	return p.safe.TakeAt(ctx, r, key, now)
}

// RunDatabase runs every check a database store shares with the others,
// each on fresh tables. It must not run beside other tests of its process:
// one check lowers the process's descriptor limit (ExhaustDescriptors).
func RunDatabase(t *testing.T, d Database) {
	t.Run("store checks", func(t *testing.T) {
		Run(t, func(t *testing.T) func() ratelab.Store {
			another := freshTables(t, d)
			return func() ratelab.Store { return another() }
		}, true)
	})
	t.Run("state survives across instances", func(t *testing.T) {
		another := freshTables(t, d)
		assert.Equal(t, int64(28), CrossInstance(t, func(*testing.T) ratelab.Store { return another() }))
	})
	t.Run("eight connections on one key count exactly", func(t *testing.T) { Exact(t, freshTables(t, d)()) })
	t.Run("a hit takes one round trip, two under a row lock", func(t *testing.T) { roundTrips(t, d) })
	t.Run("sweep deletes what is over, in batches", func(t *testing.T) { Sweep(t, freshTables(t, d)(), d.SweepSize) })
	t.Run("clear deletes every state", func(t *testing.T) { clearStates(t, freshTables(t, d)()) })
	t.Run("a row held elsewhere: the hit gives up at its timeout", func(t *testing.T) { heldRow(t, d) })
	t.Run("processes that prepare fresh tables at once all succeed", func(t *testing.T) { prepareAtOnce(t, d) })
	t.Run("a hit the client gave up on is not counted later", func(t *testing.T) { late(t, d) })
	t.Run("a hit ends when its context does", func(t *testing.T) { ctxEnds(t, d) })
	t.Run("a server with no free connection is waited out, not failed", func(t *testing.T) { full(t, d) })
	t.Run("rows no rule wrote are replaced, logged and decided", func(t *testing.T) { hostile(t, d) })
	t.Run("a row held past the timeout is load: refused under fail-open", func(t *testing.T) { heldIsLoad(t, d) })
	t.Run("a hit whose connection the server answered, then out of time, is load", func(t *testing.T) { greetedIsLoad(t, d) })
	t.Run("a server that takes connections and never answers is load: refused under fail-open", func(t *testing.T) { silentIsLoad(t, d) })
	t.Run("a table dropped under the store follows the policy", func(t *testing.T) { droppedFollowsPolicy(t, d) })
	t.Run("an outage follows the policy", func(t *testing.T) {
		open := d.Connect(t, d.Unreachable, 200*time.Millisecond)
		Outage(t, d.Pkg, func(p ratelab.FailPolicy, log *slog.Logger) ratelab.Store {
			return open(Options{Policy: p, Timeout: 200 * time.Millisecond, Logger: log})
		})
	})
	t.Run("refused settings are configuration errors, an outage is not", func(t *testing.T) { refused(t, d) })
	t.Run("a process out of file descriptors is load: refused under fail-open", func(t *testing.T) { outOfDescriptors(t, d) })
}

// freshTables creates fresh tables on d's server, and returns what makes
// another store on them.
func freshTables(t *testing.T, d Database) func() DatabaseStore {
	open := d.Connect(t, d.DSN, 5*time.Second) // -race and a shared machine
	o := Options{Prefix: fmt.Sprintf("t%d_", prefixes.Add(1)), Timeout: 5 * time.Second}
	s := open(o)
	require.NoError(t, s.CheckServer(context.Background()))
	return func() DatabaseStore { return open(o) }
}

// clearer is a store that can forget every state at once.
type clearer interface {
	ratelab.Store
	Clear(ctx context.Context) error
}

// clearStates checks that Clear forgets the states of every algorithm:
// the first hit after it is decided as the very first was.
func clearStates(t *testing.T, s DatabaseStore) {
	c, ok := Raw(s).(clearer)
	require.True(t, ok, "%T has no Clear", s)
	first := map[ratelab.Algorithm]int64{}
	for _, a := range ratelab.Algorithms() {
		r := Checked(ratelab.Rule{Name: "clear", Limit: 3, Window: time.Minute, Algorithm: a})
		first[a] = Take(t, s, r, Key, T0).Remaining
		Take(t, s, r, Key, T0)
	}
	require.NoError(t, c.Clear(context.Background()))
	for _, a := range ratelab.Algorithms() {
		d := Take(t, s, Checked(ratelab.Rule{Name: "clear", Limit: 3, Window: time.Minute, Algorithm: a}), Key, T0)
		assert.Equal(t, first[a], d.Remaining, "%s: the first hit after Clear", a)
	}
}

// heldRow checks that a hit on a row another session holds gives up at
// its timeout, uncounted, and that hits go on once it is released. Only
// that hit has the tight timeout (300 ms, the server's bound set on its
// pool's connections): the tables and the hits around it are a store's
// with time to spare, on the same tables — on a busy machine the hit
// after the release outlasted 300 ms.
func heldRow(t *testing.T, d Database) {
	o := Options{Prefix: fmt.Sprintf("t%d_", prefixes.Add(1)), Timeout: 30 * time.Second, Policy: ratelab.FailClosed}
	roomy := d.Connect(t, d.DSN, o.Timeout)(o)
	o.Timeout = 300 * time.Millisecond
	tight := d.Connect(t, d.DSN, o.Timeout)(o)
	require.NoError(t, roomy.CheckServer(context.Background()))
	log := Checked(ratelab.Rule{Name: "held", Limit: 3, Window: time.Minute, Algorithm: ratelab.SlidingLog})
	for _, c := range []struct {
		rule  ratelab.Rule
		table string
	}{{Original, "fixed"}, {log, "state"}} {
		Take(t, roomy, c.rule, Key, T0) // the row exists
		release := d.Hold(t, d.DSN, o.Prefix+c.table, roomy.Key(c.rule, Key))
		start := time.Now()
		_, err := tight.TakeAt(context.Background(), c.rule, Key, T0)
		waited := time.Since(start)
		release()
		assert.ErrorIs(t, err, ratelab.ErrUnavailable, "%s: a fail-closed hit on a held row", c.table)
		assert.Less(t, waited, 2*time.Second, "%s: the 300 ms timeout bounds the wait", c.table)
		after := Take(t, roomy, c.rule, Key, T0) // released: hits go on, the refused one uncounted
		assert.Equal(t, c.rule.Limit-2, after.Remaining, "%s: the held hit was not counted", c.table)
	}
}

// prepareAtOnce has 16 stores, as CGI processes on fresh tables' first
// request, create the tables at once.
func prepareAtOnce(t *testing.T, d Database) {
	open := d.Connect(t, d.DSN, 5*time.Second)
	o := Options{Prefix: fmt.Sprintf("t%d_", prefixes.Add(1)), Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	for range 16 {
		s := open(o)
		wg.Go(func() { assert.NoError(t, s.CheckServer(context.Background())) })
	}
	wg.Wait()
}

// refused checks that settings the server refuses wrap the package's
// ErrRefused, and that a server nobody answers for does not; that the
// refusal answers a ping — the server is alive, and a breaker must not
// open on it (the attacker's finding: a Redis refusing the password
// opened it, and fail-open let every hit through); and that a hit on
// refused settings is refused under fail-open and fail-local too (the
// attacker's finding: TLS required of a server without it was
// "unreachable", and fail-open let every hit through).
func refused(t *testing.T, d Database) {
	for _, tc := range []struct {
		name, dsn string
		refused   bool
	}{
		{"wrong password", d.WrongPassword, true},
		{"missing database", d.MissingDB, true},
		{"TLS the server does not offer", d.NoTLS, true},
		{"nobody listening", d.Unreachable, false},
	} {
		open := d.Connect(t, tc.dsn, time.Second)
		s := open(Options{})
		err := s.CheckServer(context.Background())
		require.Error(t, err, tc.name)
		assert.Equal(t, tc.refused, errors.Is(err, d.Refused), "%s: %v", tc.name, err)
		perr := s.Ping(context.Background())
		assert.Equal(t, tc.refused, perr == nil, "%s: a ping answered: %v", tc.name, perr)
		for _, p := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailLocal} {
			dec, herr := open(Options{Policy: p}).TakeAt(context.Background(), Original, Key, T0)
			assert.Equal(t, tc.refused, errors.Is(herr, d.Refused), "%s, fail-%v: the hit's error: %v", tc.name, p, herr)
			assert.Equal(t, !tc.refused, dec.Allowed, "%s, fail-%v: a hit is let through only for an outage", tc.name, p)
		}
	}
	// The attacker's finding at 5879fdb: a server that takes no writes,
	// its tables there already, started serve, and every hit failed open.
	o := Options{Prefix: fmt.Sprintf("t%d_", prefixes.Add(1)), Timeout: 5 * time.Second}
	require.NoError(t, d.Connect(t, d.DSN, 5*time.Second)(o).CheckServer(context.Background()))
	err := d.Connect(t, d.ReadOnly, 5*time.Second)(o).CheckServer(context.Background())
	assert.ErrorIs(t, err, d.Refused, "a server that takes no writes, the tables there: refused at start")
	// One that turns read-only while hits come (a failover under way) is
	// an outage to them, which the policy decides.
	o.Policy = ratelab.FailOpen
	dec, herr := d.Connect(t, d.ReadOnly, 5*time.Second)(o).TakeAt(context.Background(), Original, Key, T0)
	assert.True(t, herr == nil && dec.Allowed && errors.Is(dec.Cause, ratelab.ErrUnavailable) && !errors.Is(dec.Cause, d.Refused),
		"a hit on a read-only server under fail-open: %+v, %v", dec, herr)
}

// roundTrips checks that a hit of every algorithm takes at most the round
// trips the store promises, through a proxy that counts them: one
// statement for the fixed window, two for the others (a row lock held
// from the first to the second).
func roundTrips(t *testing.T, d Database) {
	p, err := sqlserver.CountTrips(d.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	open := d.Connect(t, strings.Replace(d.DSN, d.Addr, p.Addr, 1), 5*time.Second)
	s := open(Options{Prefix: fmt.Sprintf("t%d_", prefixes.Add(1)), Timeout: 5 * time.Second})
	require.NoError(t, s.CheckServer(context.Background()))
	const hits = 10
	for _, a := range ratelab.Algorithms() {
		r := Checked(ratelab.Rule{Name: "trips", Limit: 100, Window: time.Hour, Algorithm: a, Burst: 100})
		Take(t, s, r, Key, T0) // the row, and a connection, exist
		before := p.Count()
		for i := range hits {
			Take(t, s, r, Key, T0.Add(time.Duration(i)*time.Second))
		}
		want := int64(2)
		if a == ratelab.FixedWindow {
			want = 1
		}
		assert.LessOrEqual(t, p.Count()-before, want*hits, "%s: round trips of %d hits", a, hits)
	}
}
