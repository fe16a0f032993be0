package linearizability

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// A kill token is a file in the history directory; the process whose hit
// removes it first — os.Remove succeeds for exactly one — kills itself
// with SIGKILL in the middle of that hit: before the store is called for
// an even token, after the store decided but before the decision is
// recorded or answered for an odd one. Both leave a call with no return;
// the second leaves a hit that counted and that nobody was told about.
// Tokens make the number of kills exact, whichever processes take them.
const (
	killNone = iota
	killBefore
	killAfter
)

// PlantKills puts n kill tokens in the history directory dir.
func PlantKills(dir string, n int) error {
	for i := range n {
		f, err := os.OpenFile(tokenName(dir, i), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("linearizability: %w", err)
		}
		f.Close()
	}
	return nil
}

func tokenName(dir string, i int) string { return filepath.Join(dir, "kill-"+strconv.Itoa(i)) }

// claimKill returns how this hit is to die, if it claims a token.
func (r *Recorder) claimKill() int {
	for i := range r.kills {
		if os.Remove(tokenName(r.dir, i)) == nil {
			if i%2 == 0 {
				return killBefore
			}
			return killAfter
		}
	}
	return killNone
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
