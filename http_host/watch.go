package httphost

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/ratelab/ratelab/breaker"
	"github.com/ratelab/ratelab/harness"
)

// pinger is a store that answers pings: one on a server of its own.
type pinger interface {
	Ping(ctx context.Context) error
}

// watchStore starts the breaker of a store that answers pings (package
// breaker): one watcher, in the front's process, on a store of its own
// with one connection, whose state — a file in a new directory only this
// account can open — every child's store stands behind (Config.breaker). It
// returns what stops it; for a store that does not answer pings, nothing.
func (h *Host) watchStore() (stop func(), err error) {
	k, err := h.cfg.App.KindOf()
	if err != nil {
		return nil, err
	}
	if k.Reach != harness.AllHosts { // the lesson's stores: no server to ping
		return func() {}, nil
	}
	log := slog.New(slog.NewTextHandler(h.cfg.Stderr, nil))
	own := h.cfg.App
	own.Conns = 1
	s, closer, err := k.Open(own, log)
	if err != nil {
		return nil, err
	}
	p, ok := s.(pinger)
	if !ok {
		closer.Close()
		return func() {}, nil
	}
	dir, err := os.MkdirTemp("", "ratelab-breaker-")
	if err != nil {
		closer.Close()
		return nil, fmt.Errorf("httphost: %w", err)
	}
	path := filepath.Join(dir, "state")
	b, err := breaker.Create(path)
	if err != nil {
		closer.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Watch(ctx, breaker.Watch{Ping: p.Ping, Log: log})
	}()
	h.cfg.breaker = path
	return func() { cancel(); <-done; b.Close(); closer.Close(); os.RemoveAll(dir) }, nil
}
