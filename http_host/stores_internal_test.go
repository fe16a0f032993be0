package httphost

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness"
)

// The attacker's finding: with the breaker's directory gone — a /tmp
// cleaner, a hand — every CGI program answered 500 for as long as serve
// ran, and a pool worker that died could not be replaced. A state that
// cannot be read is a closed breaker: the hits go to the store, which
// answers for itself, and the process says so once.
func TestAMissingBreakerStateLeavesTheStoreToAnswer(t *testing.T) {
	c, err := settings{App: harness.App{Store: harness.Memory, Limit: 1, Window: time.Hour},
		Breaker: filepath.Join(t.TempDir(), "gone", "state")}.check()
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	s, err := c.newStore(slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatalf("newStore: %v, want the store without its breaker", err)
	}
	defer s.Close()
	d, err := s.TakeAt(context.Background(), c.app.CheckedRule(), "ip:192.0.2.1", time.Now())
	if err != nil || !d.Allowed {
		t.Errorf("a hit: %+v, %v; want it allowed by the store", d, err)
	}
	if !strings.Contains(log.String(), "breaker") {
		t.Errorf("the log says nothing of the breaker: %q", log.String())
	}
}
