package linearizability

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// A fault token is a file in the history directory; the process whose hit
// removes it first — os.Remove succeeds for exactly one — suffers the
// fault in the middle of that hit: before the store is called for an
// even token, after the store decided but before the decision is
// recorded or answered for an odd one. A kill token's process kills
// itself with SIGKILL: both leave a call with no return, the second a hit
// that counted and that nobody was told about. A stop token's process
// stops itself with SIGSTOP until Resume continues it: its hit spans the
// pause, and the others go on meanwhile. Tokens make the number of faults
// exact, whichever processes take them.
const (
	faultNone = iota
	killBefore
	killAfter
	stopBefore
	stopAfter
)

// PlantKills puts n kill tokens in the history directory dir.
func PlantKills(dir string, n int) error { return plant(dir, "kill-", n) }

// PlantStops puts n stop tokens in the history directory dir.
func PlantStops(dir string, n int) error { return plant(dir, "stop-", n) }

func plant(dir, prefix string, n int) error {
	for i := range n {
		f, err := os.OpenFile(filepath.Join(dir, prefix+strconv.Itoa(i)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("linearizability: %w", err)
		}
		f.Close()
	}
	return nil
}

// claimFault returns the fault this hit is to suffer, if it claims a
// token, and the token's number.
func (r *Recorder) claimFault() (fault, token int) {
	for i := range r.faults {
		n := strconv.Itoa(i)
		if os.Remove(filepath.Join(r.dir, "kill-"+n)) == nil {
			return killBefore + i%2, i
		}
		if os.Remove(filepath.Join(r.dir, "stop-"+n)) == nil {
			return stopBefore + i%2, i
		}
	}
	return faultNone, 0
}

// suffer does what fault says if it is to happen at this point of the
// hit — before the store is called, or after it decided: kills or stops
// this process, or nothing.
func (r *Recorder) suffer(fault, token int, after bool) error {
	switch {
	case fault == killBefore && !after, fault == killAfter && after:
		if err := r.write(event{Kill: monotonic()}); err != nil {
			return fmt.Errorf("linearizability: record: %w", err)
		}
		die()
	case fault == stopBefore && !after, fault == stopAfter && after:
		return r.pause(token)
	}
	return nil
}

// die kills this process as kill -9 would: no deferred function runs, no
// buffer is flushed, no lock is released but by the kernel.
func die() {
	p, err := os.FindProcess(os.Getpid())
	if err == nil {
		err = p.Kill()
	}
	if err != nil {
		panic(fmt.Sprintf("linearizability: could not kill this process: %v", err))
	}
	select {} // the signal is on its way; nothing more of this hit runs
}
