package harness

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
)

// The front of the long-lived models keeps its workers alive: a worker
// that dies — killed, crashed — is replaced by a new one, with a port and
// a token of its own, and no request goes to the dead one's port
// meanwhile. The port of a dead worker is anybody's: a local process that
// listened there would receive what the front sends, the token among it;
// each worker's token vouches at that worker alone, so the dead one's
// opens nothing. Every death is reported when the host stops.

// maxReplacements bounds the workers a host starts in dead ones' places:
// a worker that dies as it starts (a broken configuration) is not
// started again and again.
func maxReplacements(workers int) int64 { return int64(2*workers + 2) }

// pool is the long-lived workers behind the front, one slot each.
type pool struct {
	slots    []atomic.Pointer[worker]
	next     atomic.Uint64
	mu       sync.Mutex // guards closing and the slots' replacement
	closing  bool
	deaths   []error
	replaced atomic.Int64
	watchers sync.WaitGroup
}

// newPool watches each of ws.
func (h *Host) newPool(ws []*worker) {
	h.pool = &pool{slots: make([]atomic.Pointer[worker], len(ws))}
	for i, w := range ws {
		h.pool.slots[i].Store(w)
		h.pool.watchers.Go(func() { h.watch(i, w) })
	}
}

// pick returns the next live worker, round-robin, or nil if none is.
func (p *pool) pick() *worker {
	n := uint64(len(p.slots))
	start := p.next.Add(1) - 1
	for k := range n {
		if w := p.slots[(start+k)%n].Load(); !w.dead.Load() {
			return w
		}
	}
	return nil
}

// watch waits for the worker in slot i to exit and, unless the host is
// stopping, starts another in its place.
func (h *Host) watch(i int, w *worker) {
	<-w.proc.Exited()
	p := h.pool
	p.mu.Lock()
	closing := p.closing
	p.mu.Unlock()
	if closing {
		return
	}
	w.dead.Store(true)
	pid, exit := w.proc.Cmd.Process.Pid, w.proc.Close()
	if p.replaced.Add(1) > maxReplacements(len(p.slots)) {
		p.died(fmt.Errorf("harness: worker pid %d died mid-run (%w); too many deaths to start another", pid, exit))
		return
	}
	nw, err := startWorker(w.cfg)
	if err != nil {
		p.died(fmt.Errorf("harness: worker pid %d died mid-run (%w); none could take its place: %w", pid, exit, err))
		return
	}
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		nw.proc.Kill()
		return
	}
	p.slots[i].Store(nw)
	p.mu.Unlock()
	fmt.Fprintf(h.cfg.Stderr, "front: worker pid %d died; pid %d took its place\n", pid, nw.pid())
	p.died(fmt.Errorf("harness: worker pid %d died mid-run (%w); pid %d took its place", pid, exit, nw.pid()))
	p.watchers.Go(func() { h.watch(i, nw) })
}

func (p *pool) died(err error) {
	p.mu.Lock()
	p.deaths = append(p.deaths, err)
	p.mu.Unlock()
}

// stop stops every live worker and waits for the watchers; it returns
// the workers' tallies summed, and every death.
func (p *pool) stop() (Tally, error) {
	p.mu.Lock()
	p.closing = true
	var live []*worker
	for i := range p.slots {
		if w := p.slots[i].Load(); !w.dead.Load() {
			live = append(live, w)
		}
	}
	p.mu.Unlock()
	sum, err := stopWorkers(live)
	p.watchers.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return sum, errors.Join(append(p.deaths, err)...)
}

// pickedKey is the context key under which the front passes the picked
// worker to the proxy.
type pickedKey struct{}

// roundRobin is the pool's front: each request goes to the next live
// worker, as a FastCGI process manager hands requests to its children;
// with none alive, the front answers 503 itself.
func (h *Host) roundRobin() http.Handler {
	h.proxyTr = &http.Transport{MaxIdleConnsPerHost: 64, ResponseHeaderTimeout: h.cfg.Timeouts.Worker}
	proxy := &httputil.ReverseProxy{
		Transport: h.proxyTr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			w := pr.In.Context().Value(pickedKey{}).(*worker)
			pr.SetURL(w.url)
			// The client, as the worker keys it, vouched for by the
			// worker's token: whatever the client sent under these names
			// is replaced. Behind trusted proxies it is the one they
			// passed on.
			if addr, err := h.client.Addr(pr.In); err == nil {
				pr.Out.Header.Set(headerClient, h.client.Bucket(addr))
			} else {
				pr.Out.Header.Del(headerClient) // the worker refuses the hit
			}
			pr.Out.Header.Set(headerFrontToken, w.token)
			h.served.Add(1)
		},
		ErrorLog: log.New(h.cfg.Stderr, "front: ", 0),
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
