package report

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/internal/childproc"
	windowboundary "github.com/ratelab/ratelab/window_boundary"
)

// roleHit is the cross-process run's one child role: one hit at a given instant.
const roleHit = "boundary/hit"

// Roles are this package's child roles, for childproc.RunIfChild.
func Roles() childproc.Roles { return childproc.Roles{roleHit: hitChild} }

// hitChild makes one hit with a shared store (the harness's App, in
// RATELAB_APP) and a Limiter, at the instant its parent handed it: the
// clock is injected, never slept towards.
func hitChild() error {
	at, err := time.Parse(time.RFC3339Nano, os.Getenv("RATELAB_WB_AT"))
	if err != nil {
		return fmt.Errorf("RATELAB_WB_AT: %w", err)
	}
	var r ratelab.Rule
	if err := json.Unmarshal([]byte(os.Getenv("RATELAB_WB_RULE")), &r); err != nil {
		return fmt.Errorf("RATELAB_WB_RULE: %w", err)
	}
	var target harness.App
	if err := json.Unmarshal([]byte(os.Getenv("RATELAB_WB_TARGET")), &target); err != nil {
		return fmt.Errorf("RATELAB_WB_TARGET: %w", err)
	}
	store, closer, err := harness.OpenStore(target, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		return err
	}
	defer closer.Close()
	l, err := ratelab.NewLimiter(store, r)
	if err != nil {
		return err
	}
	d, err := l.AllowAt(context.Background(), "user:alice", at)
	if err != nil {
		return err
	}
	childproc.Say("result allowed=%t remaining=%d", d.Allowed, d.Remaining)
	return nil
}

// Target is where CrossProcessBurst's children keep their state: the
// store of an App of any kind the binary registers, failing closed — an
// error, never a hit let through — with its keys under a prefix of its
// own for a Redis, so that runs never share keys.
type Target = harness.App

// Burst is what CrossProcessBurst saw.
type Burst struct {
	Store     string
	Algorithm ratelab.Algorithm
	Requests  int
	Accepted  int
	// Span is the time from the first to the last accepted request.
	Span time.Duration
	// MaxInWindow is the most accepted in any window-long span.
	MaxInWindow int
}

// CrossProcessBurst sends the Edge pattern of rule r through a shared
// store with one process per request, each told its instant. Requests at
// the same instant run concurrently (at most 8 processes at once); instants
// run in order.
func CrossProcessBurst(target Target, r ratelab.Rule, t0 time.Time) (Burst, error) {
	reqs := windowboundary.Edge(int(r.Limit), r.Window, t0)
	b := Burst{Store: string(target.Store), Algorithm: r.Normalized().Algorithm, Requests: len(reqs)}
	target.FailPolicy = ratelab.FailClosed
	rule, err := json.Marshal(r)
	if err != nil {
		return b, err
	}
	app, err := json.Marshal(target)
	if err != nil {
		return b, err
	}
	var accepted []time.Time
	for i := 0; i < len(reqs); {
		j := i
		for j < len(reqs) && reqs[j].Equal(reqs[i]) {
			j++
		}
		ok := make([]bool, j-i)
		var g errgroup.Group
		g.SetLimit(8)
		for k := range ok {
			g.Go(func() error {
				var err error
				ok[k], err = oneHit(string(app), string(rule), reqs[i])
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return b, err
		}
		for _, a := range ok {
			if a {
				accepted = append(accepted, reqs[i])
			}
		}
		i = j
	}
	b.Accepted = len(accepted)
	if len(accepted) > 0 {
		b.Span = accepted[len(accepted)-1].Sub(accepted[0])
	}
	b.MaxInWindow, _ = windowboundary.MaxIn(accepted, r.Window)
	return b, nil
}

func oneHit(target, rule string, at time.Time) (bool, error) {
	p, err := childproc.Start("hit at "+at.Format(time.RFC3339), roleHit,
		"RATELAB_WB_AT="+at.Format(time.RFC3339Nano), "RATELAB_WB_RULE="+rule, "RATELAB_WB_TARGET="+target)
	if err != nil {
		return false, err
	}
	defer p.Kill()
	res, err := p.Expect("result ")
	if err != nil {
		return false, err
	}
	if err := p.Close(); err != nil {
		return false, err
	}
	return strings.HasPrefix(res, "allowed=true"), nil
}
