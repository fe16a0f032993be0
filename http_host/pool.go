package httphost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab/internal/descriptors"
)

// The front of the long-lived models keeps its workers alive. Each worker
// serves a socket the front made and keeps open (seat), so a worker's
// port never comes free for another process to take: a local process
// that listened there would be sent the front's token and its clients'
// requests. A worker that dies — killed, crashed — is replaced by a new
// one in the same seat, and the requests sent meanwhile wait in the
// socket's backlog for it. A worker that leaves a request unanswered past
// the front's Worker timeout is taken for hung and killed, as PHP-FPM's
// request_terminate_timeout does, and replaced the same way — after the
// requests waiting in its seat's backlog are closed: the front answers
// them 502, and the next worker must not count them. Every death is
// logged when it happens and reported again when the host stops.

// Replacements are bounded: a worker that dies as it starts (a broken
// configuration) is not started again and again. Past maxDeaths(workers)
// deaths within deathSpan, a seat whose worker dies stays empty, and the
// front sends its requests to the other seats, or answers 503 when none
// has a worker, until the server restarts.
const deathSpan = time.Minute

func maxDeaths(workers int) int { return 2*workers + 2 }

// pool is the long-lived workers behind the front, one per seat.
type pool struct {
	seats    []atomic.Pointer[worker]
	next     atomic.Uint64
	mu       sync.Mutex // guards closing, deaths, recent and the seats' changes
	closing  bool
	deaths   []error
	recent   []time.Time // the deaths within deathSpan
	watchers sync.WaitGroup
}

// newPool seats ws and watches each.
func (h *Host) newPool(ws []*worker) {
	h.pool = &pool{seats: make([]atomic.Pointer[worker], len(ws))}
	for i, w := range ws {
		h.pool.seats[i].Store(w)
		h.pool.watchers.Go(func() { h.watch(i, w) })
	}
}

// pick returns the worker of the next seat with one, round-robin, or nil
// if no seat has one. A worker that died and is being replaced is
// picked all the same: its request waits in the seat's backlog for the
// next worker.
func (p *pool) pick() *worker {
	n := uint64(len(p.seats))
	start := p.next.Add(1) - 1
	for k := range n {
		if w := p.seats[(start+k)%n].Load(); !w.vacated.Load() {
			return w
		}
	}
	return nil
}

// watch waits for the worker in seat i to exit and, unless the host is
// stopping, starts another in its seat.
func (h *Host) watch(i int, w *worker) {
	<-w.proc.Exited()
	p := h.pool
	p.mu.Lock()
	if p.closing { // stop reaps it, and reports it if it died
		p.mu.Unlock()
		return
	}
	w.exited.Store(true) // under mu: stop leaves it to this watcher
	many := p.died(time.Now())
	p.mu.Unlock()
	pid, exit := w.proc.Cmd.Process.Pid, w.proc.Close()
	if many > 0 {
		h.vacate(w, fmt.Errorf("httphost: worker pid %d died mid-run (%w); %d deaths within %v: its seat stays empty until the server restarts", pid, exit, many, deathSpan))
		return
	}
	if w.hung.Load() {
		w.seat.drain()
	}
	nw, err := startWorker(w.seat)
	if err != nil {
		h.vacate(w, fmt.Errorf("httphost: worker pid %d died mid-run (%w); none could take its seat: %w", pid, exit, err))
		return
	}
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		nw.proc.Kill()
		h.report(fmt.Errorf("httphost: worker pid %d died mid-run (%w)", pid, exit))
		return
	}
	p.seats[i].Store(nw)
	p.mu.Unlock()
	h.report(fmt.Errorf("httphost: worker pid %d died mid-run (%w); pid %d took its seat", pid, exit, nw.pid()))
	p.watchers.Go(func() { h.watch(i, nw) })
}

// vacate leaves w's seat empty for good, closes what waits in its
// backlog, and reports why.
func (h *Host) vacate(w *worker, why error) {
	w.vacated.Store(true)
	w.seat.drain()
	h.report(why)
}

// died counts a death at now, under p.mu, and returns the deaths within
// deathSpan if they are more than maxDeaths, else 0.
func (p *pool) died(now time.Time) int {
	for len(p.recent) > 0 && now.Sub(p.recent[0]) > deathSpan {
		p.recent = p.recent[1:]
	}
	p.recent = append(p.recent, now)
	if len(p.recent) > maxDeaths(len(p.seats)) {
		return len(p.recent)
	}
	return 0
}

// report logs a death now and keeps it for Close.
func (h *Host) report(err error) {
	fmt.Fprintf(h.cfg.Stderr, "front: %v\n", err)
	h.pool.mu.Lock()
	h.pool.deaths = append(h.pool.deaths, err)
	h.pool.mu.Unlock()
}

// stop stops every worker alive, waits for the watchers and closes the
// seats; it returns the workers' tallies summed, and every death.
func (p *pool) stop() (Tally, error) {
	p.mu.Lock()
	p.closing = true
	var live []*worker
	for i := range p.seats {
		if w := p.seats[i].Load(); !w.exited.Load() {
			live = append(live, w)
		}
	}
	p.mu.Unlock()
	sum, err := stopWorkers(live)
	p.watchers.Wait()
	for i := range p.seats {
		p.seats[i].Load().seat.close()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return sum, errors.Join(append(p.deaths, err)...)
}

// pickedKey is the context key under which the front passes the picked
// worker to the proxy.
type pickedKey struct{}

// roundRobin is the pool's front: each request goes to the next seat's
// worker, as a FastCGI process manager hands requests to its children;
// with every seat vacated, the front answers 503 itself.
func (h *Host) roundRobin() http.Handler {
	h.proxyTr = workerTransport(connsFor(fdLimit()), h.cfg.Timeouts.Worker)
	proxy := &httputil.ReverseProxy{
		Transport: h.proxyTr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			w := pr.In.Context().Value(pickedKey{}).(*worker)
			pr.SetURL(w.seat.url)
			// The client, as the worker keys it, vouched for by the
			// seat's token: whatever the client sent under these names
			// is replaced. Behind trusted proxies it is the one they
			// passed on.
			if addr, err := h.client.Addr(pr.In); err == nil {
				pr.Out.Header.Set(headerClient, h.client.Bucket(addr))
			} else {
				pr.Out.Header.Del(headerClient) // the worker refuses the hit
			}
			pr.Out.Header.Set(headerFrontToken, w.seat.token)
			h.served.Add(1)
		},
		ErrorHandler: h.proxyError,
	}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w := h.pool.pick()
		if w == nil {
			http.Error(rw, "no worker is running", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), pickedKey{}, w)))
	})
}

// workerTransport is the front's transport to its workers: at most
// perWorker connections to each, the most a worker keeps open (its
// connCap, under the same descriptor limit). Past it, the worker closes
// the connection idle longest — one the front is about to send a request
// on, answered 502 (the attacker's finding at cf8f290, at ulimit -n 64).
// A request past it waits for one of the requests in flight to end, each
// answered or given up within ResponseHeaderTimeout (the Worker timeout)
// — or for its own client to go away.
func workerTransport(perWorker int, timeout time.Duration) *http.Transport {
	return &http.Transport{MaxConnsPerHost: perWorker, MaxIdleConnsPerHost: min(64, perWorker), ResponseHeaderTimeout: timeout}
}

// proxyError answers 502 for a request its worker did not answer, and
// kills a worker that left it unanswered past the Worker timeout: hung,
// it would hold every request it is sent as long. A request the front
// had no file descriptor to pass on is load: 503.
func (h *Host) proxyError(rw http.ResponseWriter, r *http.Request, err error) {
	w := r.Context().Value(pickedKey{}).(*worker)
	h.failed.Add(1)
	if r.Context().Err() != nil {
		// The client went away: no worker's failure, and a client that
		// sends and resets connections wrote one line per request, as
		// fast as it liked (the attacker's finding at 657a847).
		h.quiet.At(time.Now(), slog.LevelInfo, "front: a client went away before its answer", "pid", w.pid(), "err", err)
		rw.WriteHeader(http.StatusBadGateway)
		return
	}
	if descriptors.Exhausted(err) {
		// The front had no descriptor to reach the worker: load that
		// clients holding its connections open make, one line a request
		// (the attacker's finding at 4a9c528: 3,763 lines in 40 s).
		h.quiet.At(time.Now(), slog.LevelWarn, "front: out of file descriptors to reach a worker: refused as busy", "pid", w.pid(), "err", err)
		rw.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintf(h.cfg.Stderr, "front: worker pid %d: %v\n", w.pid(), err)
	if isTimeout(err) && !w.exited.Load() && w.hung.CompareAndSwap(false, true) {
		fmt.Fprintf(h.cfg.Stderr, "front: worker pid %d gave no answer within %v: killed\n", w.pid(), h.cfg.Timeouts.Worker)
		w.proc.Cmd.Process.Kill()
	}
	rw.WriteHeader(http.StatusBadGateway)
}

// isTimeout reports whether err is a timeout: the transport's wait for a
// worker's answer.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
