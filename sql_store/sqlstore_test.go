package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab"
)

// A hit whose own time ran out is load, whatever it waited for — the
// dial, a reply; one that failed with time left (a refused connection)
// follows the fail policy, and so does one whose caller gave up.
func TestUnanswered(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	live := context.Background()
	read := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tt := range []struct {
		name        string
		hit, caller context.Context
		err         error
		unanswered  bool
	}{
		{"no reply, the hit's time up", ended, live, fmt.Errorf("timeout: %w", read), true},
		{"the dial unanswered, the hit's time up", ended, live, fmt.Errorf("dial error: %w", dial), true},
		{"the deadline past, its timer not yet run", past, live, read, true},
		{"a dial's own timeout, the hit's time left", live, live, dial, true},
		{"refused, time left: an outage", live, live, refused, false},
		{"reset, time left: an outage", live, live, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, false},
		{"the caller gave up", ended, ended, read, false},
	} {
		got := unanswered(tt.hit, tt.caller, tt.err)
		if errors.Is(got, ErrUnanswered) != tt.unanswered || !errors.Is(got, tt.err) {
			t.Errorf("%s: unanswered = %v, want ErrUnanswered %v", tt.name, got, tt.unanswered)
		}
	}
}

// A hit that ran out of time — on the statement, after a "too many
// connections", or on the dial — is busy (which fail-open refuses), not an
// outage (which it lets through uncounted); one refused a connection is an
// outage.
func TestTakeAtUnansweredIsBusy(t *testing.T) {
	b, err := NewBase("teststore", Options{Timeout: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)},
		Driver{Tables: func(string) Tables { return Tables{} }, Overloaded: func(err error) bool { return err.Error() == "too many connections" }})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := ratelab.Rule{Name: "r", Limit: 5, Window: time.Hour}.Check()
	now := time.Unix(1_780_000_000, 0)
	timedOut := func(err error) Step {
		return func(ctx context.Context, h Hit) (ratelab.Decision, error) {
			<-ctx.Done()
			return ratelab.Decision{}, err
		}
	}
	sent := timedOut(errors.New("timeout: context deadline exceeded"))
	tries := 0
	turnedAway := func(ctx context.Context, h Hit) (ratelab.Decision, error) {
		if tries++; tries == 1 {
			return ratelab.Decision{}, errors.New("too many connections")
		}
		return sent(ctx, h)
	}
	dialed := timedOut(&net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded})
	for _, c := range []struct {
		name string
		step Step
	}{{"the statement sent", sent}, {"turned away, then timed out", turnedAway}, {"the dial unanswered", dialed}} {
		if _, err := b.TakeAt(context.Background(), r, "k", now, c.step, nil); !errors.Is(err, ratelab.ErrBusy) {
			t.Errorf("%s: got %v, want ErrBusy", c.name, err)
		}
	}
	refused := func(context.Context, Hit) (ratelab.Decision, error) {
		return ratelab.Decision{}, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	_, err = b.TakeAt(context.Background(), r, "k", now, refused, nil)
	if !errors.Is(err, ratelab.ErrUnavailable) || errors.Is(err, ratelab.ErrBusy) {
		t.Errorf("refused: got %v, want ErrUnavailable, not ErrBusy (an outage)", err)
	}
}
