package httphost

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultCGIProcs is how many CGI programs the front runs at once unless
// Config.CGIProcs says otherwise: the "entry processes" a shared host
// allows one account by default on CloudLinux
// (https://docs.cloudlinux.com/shared/limits/).
const DefaultCGIProcs = 20

// MaxCGIProcs bounds Config.CGIProcs: Apache httpd's prefork module runs
// at most 256 processes unless ServerLimit is raised
// (https://httpd.apache.org/docs/2.4/mod/mpm_common.html#maxrequestworkers).
const MaxCGIProcs = 256

// procCap runs next for at most cap(slots) requests at once, as a web
// server runs at most so many CGI programs: the others wait their turn in
// the front, each for at most wait, and are then answered 503 with a
// Retry-After. A request's body was read whole before it waits (bodies),
// so that a client that trickles its body holds a connection, never a
// program. Refusals are reported to log, at most one line a second.
// Without it, 200 requests at once start 200 programs that share two
// cores so thinly that few meet their store's timeout: in CI 1992 of
// 2000 PostgreSQL hits were refused as busy, 8 allowed of 30.
type procCap struct {
	slots   chan struct{}
	wait    time.Duration
	waiting atomic.Int64 // requests waiting for a slot, for tests
	next    http.Handler
	log     io.Writer
	refused atomic.Int64 // refusals not yet reported
	lastLog atomic.Int64 // when refusals were last reported, in Unix ns
}

func newProcCap(n int, wait time.Duration, log io.Writer, next http.Handler) *procCap {
	return &procCap{slots: make(chan struct{}, n), wait: wait, log: log, next: next}
}

func (c *procCap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !c.acquire(r) {
		if r.Context().Err() == nil {
			w.Header().Set("Retry-After", strconv.Itoa(int(max(c.wait/time.Second, 1))))
			http.Error(w, "the server runs as many CGI programs as it may; try again later", http.StatusServiceUnavailable)
			c.refuse()
		}
		return
	}
	defer func() { <-c.slots }()
	c.next.ServeHTTP(w, r)
}

// refuse counts a refusal, and reports the refusals so far unless a
// report was made within the last second.
func (c *procCap) refuse() {
	c.refused.Add(1)
	now, last := time.Now().UnixNano(), c.lastLog.Load()
	if now-last >= int64(time.Second) && c.lastLog.CompareAndSwap(last, now) {
		c.report()
	}
}

// report writes how many requests were refused since the last report.
func (c *procCap) report() {
	if n := c.refused.Swap(0); n > 0 {
		fmt.Fprintf(c.log, "front: %d request(s) waited %v for one of the %d CGI programs and were answered 503\n", n, c.wait, cap(c.slots))
	}
}

// acquire waits for a slot for r, at most c.wait and no longer than r's
// client, and reports whether it has one.
func (c *procCap) acquire(r *http.Request) bool {
	select {
	case c.slots <- struct{}{}:
		return true
	default:
	}
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	t := time.NewTimer(c.wait)
	defer t.Stop()
	select {
	case c.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-r.Context().Done():
	}
	return false
}

// refuseNUL answers 400, before next sees it, a request with a NUL in a
// value net/http/cgi puts in its program's environment: os/exec refuses
// to start a program with one ("environment variable contains NUL"), and
// the client was answered 500 for its own malformed request. Past
// net/http only the path carries one, as %00 decoded; the query is
// passed on escaped, and a header or a Host with a NUL is refused with
// 400 before the front sees it. Every value is checked all the same.
func refuseNUL(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !envSafe(r) {
			http.Error(w, "a NUL (%00) has no place in a request to a CGI program", http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// envSafe reports whether no value net/http/cgi takes from r for its
// program's environment holds a NUL.
func envSafe(r *http.Request) bool {
	nul := func(s string) bool { return strings.IndexByte(s, 0) >= 0 }
	if slices.ContainsFunc([]string{r.Method, r.Host, r.URL.Path, r.URL.RawQuery, r.URL.RequestURI(), r.RemoteAddr}, nul) {
		return false
	}
	for name, values := range r.Header {
		if nul(name) || slices.ContainsFunc(values, nul) {
			return false
		}
	}
	return true
}
