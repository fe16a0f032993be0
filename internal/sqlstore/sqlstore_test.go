package sqlstore

import (
	"context"
	"errors"
	"testing"
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
