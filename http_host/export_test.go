package httphost

// Pids returns the process ids of the long-lived workers, for tests that
// kill one.
func (h *Host) Pids() []int {
	var pids []int
	for _, w := range h.Workers() {
		pids = append(pids, w.Pid)
	}
	return pids
}

// WorkerInfo is what a test may know of a worker: its pid, its address
// and the token its front vouches with.
type WorkerInfo struct {
	Pid         int
	Addr, Token string
}

// Workers returns the pool's current workers, in the front's order.
func (h *Host) Workers() []WorkerInfo {
	var out []WorkerInfo
	for i := range h.pool.seats {
		w := h.pool.seats[i].Load()
		out = append(out, WorkerInfo{w.proc.Cmd.Process.Pid, w.seat.url.Host, w.seat.token})
	}
	return out
}

// FrontKey is the key function of a worker whose front has token.
var FrontKey = frontKey

// The headers the front passes the client and its token in.
const (
	HeaderClient     = headerClient
	HeaderFrontToken = headerFrontToken
)

// CGIWaiting returns how many requests wait for one of the CGI front's
// programs.
func (h *Host) CGIWaiting() int64 { return h.cgiCap.waiting.Load() }

// Bodies returns the bytes of bodies the front holds, and how many it
// refused for want of room.
func (h *Host) Bodies() (held, refused int64) {
	return h.bodies.held.Load(), h.bodies.overHeld.Load()
}

// Passed returns how many requests the front passed to a pool worker,
// and how many of those it did not get an answer to.
func (h *Host) Passed() (served, failed int64) { return h.served.Load(), h.failed.Load() }
