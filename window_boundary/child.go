package windowboundary

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/childproc"
)

// EnvRole makes a re-executed binary a one-hit child of this package.
const EnvRole = "RATELAB_WB_CHILD"

// RunChildIfRequested runs a child's one hit and exits; in a parent it
// returns at once. Call it first in TestMain and in main.
func RunChildIfRequested() {
	role, ok := os.LookupEnv(EnvRole)
	if !ok {
		return
	}
	if err := hitChild(role); err != nil {
		fmt.Fprintf(os.Stderr, "window_boundary child (pid %d): %v\n", os.Getpid(), err)
		os.Exit(2)
	}
	os.Exit(0)
}

// hitChild makes one hit with the file store and a Limiter, at the instant
// its parent handed it: the clock is injected, never slept towards.
func hitChild(role string) error {
	if role != "hit" {
		return fmt.Errorf("unknown role %q", role)
	}
	at, err := time.Parse(time.RFC3339Nano, os.Getenv("RATELAB_WB_AT"))
	if err != nil {
		return fmt.Errorf("RATELAB_WB_AT: %w", err)
	}
	limit, err := strconv.Atoi(os.Getenv("RATELAB_WB_LIMIT"))
	if err != nil {
		return fmt.Errorf("RATELAB_WB_LIMIT: %w", err)
	}
	window, err := time.ParseDuration(os.Getenv("RATELAB_WB_WINDOW"))
	if err != nil {
		return fmt.Errorf("RATELAB_WB_WINDOW: %w", err)
	}
	store, err := fixedfilestore.New(os.Getenv("RATELAB_WB_DIR"), fixedfilestore.Options{
		FailPolicy: ratelab.FailClosed, Algorithm: ratelab.Algorithm(os.Getenv("RATELAB_WB_ALGORITHM"))})
	if err != nil {
		return err
	}
	l, err := ratelab.NewLimiter(store, limit, window)
	if err != nil {
		return err
	}
	d, err := l.AllowAt(os.Getenv("RATELAB_WB_KEY"), at)
	if err != nil {
		return err
	}
	childproc.Say("result allowed=%t count=%d", d.Allowed, d.Count)
	return nil
}

// Burst is what CrossProcessBurst saw.
type Burst struct {
	Algorithm ratelab.Algorithm
	Requests  int
	Accepted  int
	// Span is the time from the first to the last accepted request.
	Span time.Duration
	// MaxInWindow is the most accepted in any window-long span.
	MaxInWindow int
}

// CrossProcessBurst sends the Edge pattern through the file store with one
// process per request, each told its instant. Requests at the same instant
// run concurrently (at most 8 processes at once); instants run in order.
func CrossProcessBurst(dir string, alg ratelab.Algorithm, limit int, window time.Duration, t0 time.Time) (Burst, error) {
	reqs := Edge(limit, window, t0)
	b := Burst{Algorithm: alg, Requests: len(reqs)}
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
				ok[k], err = oneHit(dir, alg, limit, window, reqs[i])
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
	b.MaxInWindow, _ = MaxIn(accepted, window)
	return b, nil
}

func oneHit(dir string, alg ratelab.Algorithm, limit int, window time.Duration, at time.Time) (bool, error) {
	p, err := childproc.Start("hit at "+at.Format(time.RFC3339),
		EnvRole+"=hit",
		"RATELAB_WB_AT="+at.Format(time.RFC3339Nano),
		"RATELAB_WB_LIMIT="+strconv.Itoa(limit),
		"RATELAB_WB_WINDOW="+window.String(),
		"RATELAB_WB_DIR="+dir,
		"RATELAB_WB_KEY=login:user:alice",
		"RATELAB_WB_ALGORITHM="+string(alg),
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
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
