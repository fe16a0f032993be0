package redisserver

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// lines records what go-redis logs.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, fmt.Sprintf(format, v...))
}

// Waiting for a server that is still starting logs nothing through
// go-redis: a program that routes go-redis's log to its own (the CLI
// does) printed "failed to dial" warnings while its private server came
// up, which its users' pages do not show.
func TestWaitReadyLogsNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there: every dial is refused
	rec := &lines{}
	redis.SetLogger(rec) // for the rest of this package's tests: go-redis has no getter to restore from
	s := &Server{Addr: addr}
	if err := s.waitReady(300 * time.Millisecond); err == nil {
		t.Fatal("waitReady on a port nothing listens on: nil error, want one")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.got) > 0 {
		t.Errorf("go-redis logged %d lines while waiting, the first %q; want none", len(rec.got), rec.got[0])
	}
}
