package httphost

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
)

// MaxBody bounds a request body a front passes on: nginx's default
// client_max_body_size
// (https://nginx.org/en/docs/http/ngx_http_core_module.html#client_max_body_size).
const MaxBody = 1 << 20

// MaxBodies bounds the bodies a front holds in memory at once, all
// requests together; a body that would pass it is answered 503.
const MaxBodies = 32 << 20

// bodies is the first thing every front does with a request: it reads
// the body whole before next sees the request, as nginx buffers one
// before it passes it on to a CGI program, a FastCGI pool or a proxied
// server (https://nginx.org/en/docs/http/ngx_http_proxy_module.html#proxy_request_buffering).
// A client that trickles its body holds a connection, never a program or
// a worker; a body cut short, out of its read time or malformed (a chunk
// size that is no number) is the client's fault, answered 400 by the
// front, and nothing behind the front ever sees the request — a pool's
// worker was sent its headers, and the front answered 502 and counted a
// failure against the worker. A body over MaxBody is answered 413, one
// that would pass MaxBodies 503.
type bodies struct {
	next     http.Handler
	held     atomic.Int64 // bytes of bodies held, at most MaxBodies
	overHeld atomic.Int64 // bodies refused for want of room, for tests
}

func (b *bodies) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		n, code := b.read(w, r)
		defer b.held.Add(-n)
		if code != 0 {
			http.Error(w, http.StatusText(code), code)
			return
		}
	}
	b.next.ServeHTTP(w, r)
}

// read reads r's body whole, within MaxBody and what MaxBodies leaves,
// and replaces it with what it read; it returns the bytes it holds, and
// the status to refuse r with, or 0. A declared length over MaxBody is
// refused before a byte is read: no 100 Continue is sent.
func (b *bodies) read(w http.ResponseWriter, r *http.Request) (held int64, code int) {
	if r.ContentLength > MaxBody {
		return 0, http.StatusRequestEntityTooLarge
	}
	var body bytes.Buffer
	src := http.MaxBytesReader(w, r.Body, MaxBody)
	for chunk := make([]byte, 32<<10); ; {
		n, err := src.Read(chunk)
		if n > 0 {
			held += int64(n)
			if b.held.Add(int64(n)) > MaxBodies {
				b.overHeld.Add(1)
				return held, http.StatusServiceUnavailable
			}
			body.Write(chunk[:n])
		}
		switch {
		case err == io.EOF:
			// Passed on with its length: net/http/cgi refuses a chunked
			// one, and a worker is sent it in one piece.
			r.Body, r.ContentLength, r.TransferEncoding = io.NopCloser(&body), int64(body.Len()), nil
			return held, 0
		case errors.As(err, new(*http.MaxBytesError)):
			return held, http.StatusRequestEntityTooLarge
		case err != nil:
			return held, http.StatusBadRequest // cut, malformed, or out of its read time
		}
	}
}
