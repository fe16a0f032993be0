package httphost

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/httplimit"
)

// The front passes the client to its workers the way nginx hands
// REMOTE_ADDR to PHP-FPM: in a field the client cannot set. Here it is a
// request header, X-Ratelab-Client, holding the client as the worker keys
// it (httplimit.Client.Bucket: the address, or an IPv6 client's network),
// so the worker reads it and parses nothing. A worker believes it only
// when the request also carries the front's token, X-Ratelab-Front — a
// random secret the front makes at start and hands its workers in their
// environment, which no client ever sees. A client that sends either
// header itself reaches a worker with the front's values in their place,
// and a client that connects to a worker directly is keyed on its own
// address. (nginx's set_real_ip_from trusts an address instead of a
// secret; on one machine every process shares 127.0.0.1, so a secret it
// is.) X-Forwarded-For is never read: any client can send it.
const (
	headerClient     = "X-Ratelab-Client"
	headerFrontToken = "X-Ratelab-Front"
)

// newFrontToken returns a fresh random secret.
func newFrontToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// frontKey keys a request on the client its front passed on, if the
// request carries the front's token, and otherwise on the client as
// client tells it from the connection (and the proxies it trusts).
func frontKey(token string, client httplimit.Client) httplimit.KeyFunc {
	direct := client.Key(harness.KeyPrefix)
	return func(r *http.Request) (string, error) {
		got := r.Header.Get(headerFrontToken)
		if token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return direct(r)
		}
		bucket := r.Header.Get(headerClient)
		if bucket == "" {
			return "", errors.New("httphost: the front passed no client")
		}
		return harness.KeyPrefix + bucket, nil
	}
}

// Timeouts bound what a slow or idle client can hold: the time to send
// the headers, the whole request, the whole answer, and an idle keep-alive
// connection; MaxHeaderBytes bounds the headers' size. Worker bounds what
// a hung worker can hold: the pool's front waits that long for a worker's
// answer, then answers 502 itself; and how long a request waits its turn
// for one of the CGI front's programs, then is answered 503.
type Timeouts struct {
	ReadHeader, Read, Write, Idle, Worker time.Duration
	MaxHeaderBytes                        int
}

// DefaultTimeouts are the front's and the workers': an idle connection or
// a trickled body is cut within 30 s; a worker that has not answered in
// 10 s — longer than any store waits (the file store's lock 3 s, a
// server's 2 s) — is given up on.
func DefaultTimeouts() Timeouts {
	return Timeouts{ReadHeader: 5 * time.Second, Read: 30 * time.Second, Write: 30 * time.Second, Idle: 30 * time.Second,
		Worker: 10 * time.Second, MaxHeaderBytes: 16 << 10}
}

// server returns an http.Server for h with the timeouts, whose
// connections are capped by lim (nil: no cap).
func (t Timeouts) server(h http.Handler, lim *connCap) *http.Server {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read,
		WriteTimeout: t.Write, IdleTimeout: t.Idle, MaxHeaderBytes: t.MaxHeaderBytes}
	if lim != nil {
		srv.ConnState = lim.track
	}
	return srv
}

// connCap keeps a server answering new clients when idle ones pile up: at
// most max connections are open, and a new one closes the connection that
// has been idle longest (a keep-alive connection between requests, or one
// that has sent nothing yet). Without it, hundreds of idle connections
// exhaust a low descriptor limit, accept fails, and new requests wait in
// the kernel's backlog until the idle ones time out.
type connCap struct {
	max   int
	mu    sync.Mutex
	conns map[net.Conn]connInfo
}

type connInfo struct {
	state http.ConnState
	since time.Time
}

// newConnCap caps connections at connsFor the process's descriptor limit.
func newConnCap() *connCap {
	cur, err := fdLimit()
	return &connCap{max: connsFor(cur, err), conns: map[net.Conn]connInfo{}}
}

// connsFor is how many connections a front keeps open under a descriptor
// limit of cur (err: none known): half of it less a reserve, so that it
// also has room for its connections to workers, and at least 8 — however
// low the limit (at 64 and below the cap was once off, and idle
// connections exhausted it: the attacker's finding at 4a9c528).
func connsFor(cur uint64, err error) int {
	if err != nil || cur >= 1<<20 {
		return 1024
	}
	return max((int(cur)-32)/2, 8)
}

// track is the server's ConnState hook.
func (c *connCap) track(conn net.Conn, state http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch state {
	case http.StateClosed, http.StateHijacked:
		delete(c.conns, conn)
		return
	case http.StateNew:
		if len(c.conns) >= c.max {
			c.evictLocked()
		}
	}
	c.conns[conn] = connInfo{state, time.Now()}
}

// evictLocked closes the connection idle longest, if any is idle.
func (c *connCap) evictLocked() {
	var victim net.Conn
	var oldest time.Time
	for conn, info := range c.conns {
		if info.state != http.StateIdle && info.state != http.StateNew {
			continue
		}
		if victim == nil || info.since.Before(oldest) {
			victim, oldest = conn, info.since
		}
	}
	if victim != nil {
		victim.Close()
		delete(c.conns, victim)
	}
}
