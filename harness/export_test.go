package harness

// Pids returns the process ids of the long-lived workers, for tests that
// kill one.
func (h *Host) Pids() []int {
	var pids []int
	for _, w := range h.workers {
		pids = append(pids, w.proc.Cmd.Process.Pid)
	}
	return pids
}

// FrontKey is the key function of a worker whose front has token.
var FrontKey = frontKey

// The headers the front passes the client and its token in.
const (
	HeaderClient     = headerClient
	HeaderFrontToken = headerFrontToken
)
