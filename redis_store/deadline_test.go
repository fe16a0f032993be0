package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDeadlineContext(t *testing.T) {
	ctx := withDeadline(context.Background(), time.Now().Add(time.Hour))
	if d, ok := ctx.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Errorf("Deadline() = %v, %v; want about an hour from now, true", d, ok)
	}
	if err := ctx.Err(); err != nil {
		t.Errorf("Err() before the deadline = %v, want nil", err)
	}
	if err := withDeadline(context.Background(), time.Now().Add(-time.Second)).Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Err() after the deadline = %v, want context.DeadlineExceeded", err)
	}
	parent, cancel := context.WithCancel(context.Background())
	child := withDeadline(parent, time.Now().Add(time.Hour))
	cancel()
	<-child.Done() // the parent's: closed by its cancel
	if err := child.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Err() of a cancelled parent = %v, want context.Canceled", err)
	}
	sooner, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	if got := withDeadline(sooner, time.Now().Add(time.Hour)); got != sooner {
		t.Errorf("a parent whose deadline comes sooner: got %T, want the parent itself", got)
	}
}
