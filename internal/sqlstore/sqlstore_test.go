package sqlstore

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelab/ratelab"
)

// A hit that queued behind its process's other hits and ran out of time
// is load; one that did not queue (a dial that failed or timed out) is not.
func TestAcquired(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	waited := errors.New("context canceled")
	for _, tt := range []struct {
		name   string
		ctx    context.Context
		queued bool
		full   bool
	}{
		{"queued, the hit's time up", ended, true, true},
		{"never queued: a dial that timed out", ended, false, false},
		{"time left: the dial failed", context.Background(), true, false},
	} {
		got := Acquired(tt.ctx, waited, tt.queued)
		if errors.Is(got, ErrPoolFull) != tt.full || !errors.Is(got, waited) {
			t.Errorf("%s: Acquired = %v, want ErrPoolFull %v", tt.name, got, tt.full)
		}
	}
	if Acquired(ended, nil, true) != nil {
		t.Error("Acquired(nil) is not nil")
	}
	if !Queued(10, 10) || Queued(9, 10) || Queued(10, 0) {
		t.Error("Queued: every connection taken of a bounded pool, and only then")
	}
}

// A hit whose time ran out is load when the server answered the process
// meanwhile, and follows the fail policy when it answered
// nobody: a stopped server and a crowded one look the same to the hit
// alone.
func TestCrowded(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	live := context.Background()
	cut := errors.New("timeout: context deadline exceeded")
	for _, tt := range []struct {
		name        string
		hit, caller context.Context
		answered    bool
		crowded     bool
	}{
		{"the process answered, the hit's time up", ended, live, true, true},
		{"nobody answered: an outage", ended, live, false, false},
		{"the caller gave up", ended, ended, true, false},
		{"time left: another failure", live, live, true, false},
	} {
		got := crowded(tt.hit, tt.caller, cut, tt.answered)
		if errors.Is(got, ErrCrowded) != tt.crowded || !errors.Is(got, cut) {
			t.Errorf("%s: Crowded = %v, want ErrCrowded %v", tt.name, got, tt.crowded)
		}
	}
}

// Under fail-open, a hit that timed out while the server answered another
// hit, turned a connection away, or greeted a connection of the process
// is refused as busy, not let through uncounted; one that timed out while
// the server answered nobody is let through, as an outage.
func TestTakeAtCrowdedIsBusy(t *testing.T) {
	b, err := NewBase("teststore", Options{FailPolicy: ratelab.FailOpen, Timeout: time.Second, Logger: slog.New(slog.DiscardHandler)},
		Driver{Tables: func(string) Tables { return Tables{} }})
	if err != nil {
		t.Fatal(err)
	}
	r := ratelab.Rule{Name: "r", Limit: 5, Window: time.Hour}
	now := time.Unix(1_780_000_000, 0)
	answered := func(context.Context, Hit) (ratelab.Decision, error) { return ratelab.Decision{Allowed: true}, nil }
	timedOut := func(other Step) Step {
		return func(ctx context.Context, h Hit) (ratelab.Decision, error) {
			if other != nil {
				if _, err := b.TakeAt(context.Background(), r, "other", now, other, other); err != nil {
					t.Fatal(err)
				}
			}
			<-ctx.Done()
			return ratelab.Decision{}, errors.New("timeout: context deadline exceeded")
		}
	}
	b.Timeout = 20 * time.Millisecond
	_, err = b.TakeAt(context.Background(), r, "k", now, timedOut(answered), nil)
	if !errors.Is(err, ratelab.ErrBusy) {
		t.Errorf("another hit answered meanwhile: got %v, want ErrBusy", err)
	}
	d, err := b.TakeAt(context.Background(), r, "k", now, timedOut(nil), nil)
	if err != nil || d.NotCounted == nil {
		t.Errorf("nobody answered: got %+v, %v, want an allowed hit, not counted (fail-open)", d, err)
	}
	var greeted atomic.Int64
	b.greeted = greeted.Load
	connected := func(ctx context.Context, h Hit) (ratelab.Decision, error) {
		greeted.Add(1) // the hit's connection, greeted; then its statement waits
		return timedOut(nil)(ctx, h)
	}
	if _, err := b.TakeAt(context.Background(), r, "k", now, connected, nil); !errors.Is(err, ratelab.ErrBusy) {
		t.Errorf("the hit's connection greeted: got %v, want ErrBusy", err)
	}
	b.Overloaded = func(err error) bool { return err.Error() == "too many connections" }
	tries := 0
	turnedAway := func(ctx context.Context, h Hit) (ratelab.Decision, error) {
		if tries++; tries == 1 {
			return ratelab.Decision{}, errors.New("too many connections")
		}
		return timedOut(nil)(ctx, h)
	}
	if _, err := b.TakeAt(context.Background(), r, "k", now, turnedAway, nil); !errors.Is(err, ratelab.ErrBusy) {
		t.Errorf("turned away, then timed out: got %v, want ErrBusy", err)
	}
}
