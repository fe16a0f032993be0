package linearizability

import (
	"testing"
	"time"
)

// With a speed, the instant a store is given is the history's clock at
// the hit's call, not the instant its process read: every process reads
// the same clock, and the windows pass speed times as fast.
func TestHistoryClock(t *testing.T) {
	dir := t.TempDir()
	rec, err := NewRecorder(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	rec.speed = 5
	s := rec.Store(fakeStore{remaining: 2})
	for range 3 {
		if _, err := s.TakeAt(t.Context(), rule3, "k", t0); err != nil {
			t.Fatal(err)
		}
	}
	h, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Ops) != 3 {
		t.Fatalf("%d operations, want 3", len(h.Ops))
	}
	for _, op := range h.Ops {
		if at, want := op.Input.(input).At, HistoryClock(op.Call, 5); !at.Equal(want) {
			t.Errorf("the store was given %v, want the history's clock at the call, %v", at, want)
		}
	}
	first, last := h.Ops[0], h.Ops[2]
	if got, want := h.Span(), time.Duration(last.Call-first.Call)*5; got != want {
		t.Errorf("Span %v, want 5 × the calls' span, %v", got, want)
	}
	if got := HistoryClock(int64(time.Second), 5).Sub(HistoryClock(0, 5)); got != 5*time.Second {
		t.Errorf("a second of CLOCK_MONOTONIC is %v on the history's clock at 5, want 5s", got)
	}
}
