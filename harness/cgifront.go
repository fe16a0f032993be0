package harness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
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

// MaxCGIBody bounds a request body the CGI front passes on: nginx's
// default client_max_body_size
// (https://nginx.org/en/docs/http/ngx_http_core_module.html#client_max_body_size).
const MaxCGIBody = 1 << 20

// MaxCGIBodies bounds the bodies the CGI front holds in memory at once,
// all requests together; a body that would pass it is answered 503.
const MaxCGIBodies = 32 << 20

// procCap runs next for at most cap(slots) requests at once, as a web
// server runs at most so many CGI programs: the others wait their turn in
// the front, each for at most wait, and are then answered 503 with a
// Retry-After. A request's body is read whole before it waits, as nginx
// buffers one before it passes it on, so that a client that trickles its
// body holds a connection, never a program; a body over MaxCGIBody is
// answered 413. Refusals are reported to log, at most one line a second.
// Without it, 200 requests at once start 200 programs that
// share two cores so thinly that few meet their store's timeout: in CI
// 1992 of 2000 PostgreSQL hits were refused as busy, 8 allowed of 30.
type procCap struct {
	slots    chan struct{}
	wait     time.Duration
	waiting  atomic.Int64 // requests waiting for a slot, for tests
	next     http.Handler
	log      io.Writer
	refused  atomic.Int64 // refusals not yet reported
	lastLog  atomic.Int64 // when refusals were last reported, in Unix ns
	held     atomic.Int64 // bytes of bodies held, at most MaxCGIBodies
	overHeld atomic.Int64 // bodies refused for want of room, for tests
}

func newProcCap(n int, wait time.Duration, log io.Writer, next http.Handler) *procCap {
	return &procCap{slots: make(chan struct{}, n), wait: wait, log: log, next: next}
}

func (c *procCap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		n, code := c.readBody(w, r)
		defer c.held.Add(-n)
		if code != 0 {
			http.Error(w, http.StatusText(code), code)
			return
		}
	}
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

// readBody reads r's body whole, within MaxCGIBody and what MaxCGIBodies
// leaves, and replaces it with what it read; it returns the bytes it
// holds, and the status to refuse r with, or 0. A declared length over
// MaxCGIBody is refused before a byte is read: no 100 Continue is sent.
func (c *procCap) readBody(w http.ResponseWriter, r *http.Request) (held int64, code int) {
	if r.ContentLength > MaxCGIBody {
		return 0, http.StatusRequestEntityTooLarge
	}
	var body bytes.Buffer
	src := http.MaxBytesReader(w, r.Body, MaxCGIBody)
	for chunk := make([]byte, 32<<10); ; {
		n, err := src.Read(chunk)
		if n > 0 {
			held += int64(n)
			if c.held.Add(int64(n)) > MaxCGIBodies {
				c.overHeld.Add(1)
				return held, http.StatusServiceUnavailable
			}
			body.Write(chunk[:n])
		}
		switch {
		case err == io.EOF:
			// Passed on with its length: net/http/cgi refuses a chunked one.
			r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(&body), int64(body.Len()), nil
			return held, 0
		case errors.As(err, new(*http.MaxBytesError)):
			return held, http.StatusRequestEntityTooLarge
		case err != nil:
			return held, http.StatusBadRequest // cut, or out of its read time
		}
	}
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
