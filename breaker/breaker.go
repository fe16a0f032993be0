// Package breaker tells every process of a host at once that their shared
// store has stopped answering, so that each request is decided by the
// fail policy straight away instead of waiting out the store's timeout.
//
// A store that hangs — its server stopped, its host cut off — does not
// refuse a hit: it never answers, and the hit waits its whole timeout.
// A store too busy to answer in time looks the same to a hit, and sending
// fast makes it: that is load, not an outage, and ratelab.WithFailPolicy
// refuses such a hit (ratelab.ErrBusy) under every policy but fail-local.
// So a hit cannot judge the store; one watcher does, from outside the
// traffic: [Breaker.Watch] pings the store every Every on a connection of
// its own, already open — no listen queue, no pool, no row lock in the
// way — and opens the breaker after Trips pings in a row went unanswered
// within Timeout, unless a hit was answered within Quiet; the first ping
// answered closes it. A ping can go unanswered under load too — the
// watcher's own process, a front taking a flood, waits its turn for the
// CPU like the store's — but a store that answers hits is not hung: every
// process records when its store last answered a hit, and that is
// evidence of life the watcher weighs against its pings. A ping the
// watcher's process had no file descriptor to send is no evidence at all:
// it closes the breaker, and the hits, refused as busy if they cannot
// reach the store either, judge it instead. Under
// [Wrap], a hit while the breaker is open is an error wrapping ErrDown,
// at once; a hit that ran out of time while it opened is one too, not
// ErrBusy: the policy decides both (gobreaker's closed and open states;
// its half-open state is the watcher's next ping, which risks no hit).
//
// The state is a file of nine bytes: one the watcher writes and every
// process of the host reads at each hit (Open), then the instant a hit was
// last answered, which every process writes; or the same in memory for
// the processes that watch their own store (New). A Breaker is safe for
// concurrent use.
package breaker

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/descriptors"
)

// ErrDown is wrapped by the error of a hit the breaker decided: the store
// does not answer. It wraps ratelab.ErrUnavailable, not ratelab.ErrBusy,
// so the fail policy decides the hit.
var ErrDown = fmt.Errorf("%w: the store does not answer (breaker open)", ratelab.ErrUnavailable)

// Breaker says whether the store is known down.
type Breaker struct {
	file     *os.File // the shared state, or nil: in memory
	write    bool     // this process is the watcher of file
	down     atomic.Bool
	answered atomic.Int64 // in memory: when a hit was last answered, Unix ns
	recorded atomic.Int64 // when this process last wrote answered to file
}

// size is the shared state's: the open byte, then the last answer's
// instant, Unix nanoseconds, little-endian.
const size = 9

// New returns a breaker in this process's memory, closed.
func New() *Breaker { return &Breaker{} }

// Create makes the shared state at path — a new file, mode 0600, in a
// directory only this account can write — closed, for this process to
// watch.
func Create(path string) (*Breaker, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("breaker: %w", err)
	}
	b := &Breaker{file: f, write: true}
	if _, err := f.WriteAt(make([]byte, size), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("breaker: %w", err)
	}
	if err := b.set(false); err != nil {
		f.Close()
		return nil, err
	}
	return b, nil
}

// Open opens the shared state at path, which another process watches, to
// read whether it is open and to record the hits its store answers.
func Open(path string) (*Breaker, error) {
	f, err := os.OpenFile(path, os.O_RDWR|noFollow, 0)
	if err != nil {
		return nil, fmt.Errorf("breaker: %w", err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
		f.Close()
		return nil, fmt.Errorf("breaker: %s is not a breaker's state", path)
	}
	return &Breaker{file: f}, nil
}

// Close closes the shared state's file.
func (b *Breaker) Close() error {
	if b.file == nil {
		return nil
	}
	return b.file.Close()
}

// Down reports whether the breaker is open. A state it cannot read is
// closed: the hits go to the store, which answers for itself.
func (b *Breaker) Down() bool {
	if b.file == nil || b.write {
		return b.down.Load()
	}
	var buf [1]byte
	n, _ := b.file.ReadAt(buf[:], 0) // one byte read is the whole state, with io.EOF or not
	return n == 1 && buf[0] == '1'
}

// Answered records that the store answered a hit at now: evidence that
// it is alive, whatever the watcher's pings say. A process writes the
// shared state at most every tenth of a second.
func (b *Breaker) Answered(now time.Time) {
	ns := now.UnixNano()
	if b.file == nil {
		b.answered.Store(ns)
		return
	}
	if last := b.recorded.Load(); ns-last < int64(100*time.Millisecond) || !b.recorded.CompareAndSwap(last, ns) {
		return
	}
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(ns))
	b.file.WriteAt(buf[:], 1) // a record lost is evidence lost: the pings decide alone
}

// lastAnswer returns when a hit was last answered, as recorded; the zero
// time if none was.
func (b *Breaker) lastAnswer() time.Time {
	ns := b.answered.Load()
	if b.file != nil {
		var buf [8]byte
		if n, _ := b.file.ReadAt(buf[:], 1); n == 8 {
			ns = int64(binary.LittleEndian.Uint64(buf[:]))
		}
	}
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// set opens (down) or closes the breaker.
func (b *Breaker) set(down bool) error {
	b.down.Store(down)
	if b.file == nil {
		return nil
	}
	state := []byte{'0'}
	if down {
		state[0] = '1'
	}
	if _, err := b.file.WriteAt(state, 0); err != nil {
		return fmt.Errorf("breaker: %w", err)
	}
	return nil
}

// Watch says how to watch a store.
type Watch struct {
	// Ping asks the store for a sign of life on a connection kept open.
	Ping func(ctx context.Context) error
	// Every is the time between pings; 0 means 200 ms.
	Every time.Duration
	// Timeout is how long a ping may take; 0 means 1 s.
	Timeout time.Duration
	// Trips is how many pings in a row must go unanswered to open the
	// breaker; 0 means 2.
	Trips int
	// Quiet is how long no hit may have been answered for the breaker to
	// open: a store that answered one since is slow, not hung; 0 means
	// 2 s.
	Quiet time.Duration
	// Log receives a line when the breaker opens and when it closes; nil
	// means slog.Default().
	Log *slog.Logger
}

// Watch pings the store until ctx ends, opening and closing the breaker.
func (b *Breaker) Watch(ctx context.Context, w Watch) {
	every := cmp.Or(max(w.Every, 0), 200*time.Millisecond)
	timeout := cmp.Or(max(w.Timeout, 0), time.Second)
	trips := cmp.Or(max(w.Trips, 0), 2)
	quiet := cmp.Or(max(w.Quiet, 0), 2*time.Second)
	log := cmp.Or(w.Log, slog.Default())
	tick := time.NewTicker(every)
	defer tick.Stop()
	for failed := 0; ; {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		err := w.Ping(pctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		failed = b.judge(err, failed, trips, quiet, log)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// judge opens or closes the breaker after a ping that failed with err (or
// answered, nil), the failed-th in a row before it, and returns how many
// have failed in a row now. It opens only if no hit was answered within
// quiet. A ping this process had no file descriptor to send (EMFILE,
// ENFILE) is no ping: it closes the breaker and starts the count again.
func (b *Breaker) judge(err error, failed, trips int, quiet time.Duration, log *slog.Logger) int {
	if err == nil {
		if b.down.Load() {
			if serr := b.set(false); serr != nil {
				log.Error("breaker: the store answers again, and the breaker cannot say so", "err", serr)
			} else {
				log.Warn("breaker: the store answers again: breaker closed, hits go to the store")
			}
		}
		return 0
	}
	if descriptors.Exhausted(err) {
		// The ping was never sent: nothing is known of the store, and a
		// client can make this by holding the front's connections open.
		// The hits judge it instead, refused as busy if they cannot reach
		// it either: load, not an outage.
		if b.down.Load() {
			if serr := b.set(false); serr != nil {
				log.Error("breaker: out of file descriptors to ping the store, and the breaker cannot close", "err", serr)
			} else {
				log.Warn("breaker: out of file descriptors to ping the store: breaker closed, hits go to the store", "err", err)
			}
		}
		return 0
	}
	failed++
	// An answer from the future is no evidence: a clock stepped back, or a
	// file someone else wrote.
	if age := time.Since(b.lastAnswer()); failed >= trips && !b.down.Load() && (age >= quiet || age < -quiet) {
		if serr := b.set(true); serr != nil {
			log.Error("breaker: the store does not answer, and the breaker cannot say so", "err", serr)
		} else {
			log.Error("breaker: the store does not answer: breaker open, every hit decided by the fail policy", "pings", failed, "err", err)
		}
	}
	return failed
}
