package linearizability

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// pause announces this process in the history directory, as a file
// "stopped-<pid>-<token>", stops it with SIGSTOP, and once continued
// renames the file "continued-<pid>-<token>": that is how Resume knows a
// SIGCONT landed, and counts the stops. The
// signal is sent to this thread (tgkill), which takes it on its way back
// from the call, before it runs another instruction: sent to the process
// (kill), another thread may take it while this one runs on and removes
// the file, and nothing would continue the process. A SIGCONT that comes
// before the SIGSTOP (this thread descheduled between the two) continues
// nothing; the file is still there, and Resume sends another.
func (r *Recorder) pause(token int) error {
	name := filepath.Join(r.dir, fmt.Sprintf("stopped-%d-%d", os.Getpid(), token))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("linearizability: %w", err)
	}
	f.Close()
	runtime.LockOSThread() // gettid and tgkill name the same thread
	err = unix.Tgkill(os.Getpid(), unix.Gettid(), unix.SIGSTOP)
	runtime.UnlockOSThread()
	if err != nil {
		return fmt.Errorf("linearizability: %w", err)
	}
	return os.Rename(name, filepath.Join(r.dir, "continued"+strings.TrimPrefix(filepath.Base(name), "stopped")))
}

// Resume continues, with SIGCONT, every process of the history directory
// dir that stopped itself on a stop token: once the other processes have
// recorded returns more answers since it stopped, or after hold if they
// cannot (a single process serves them all, or they wait for its lock).
// It sends SIGCONT again at every look until the process says it runs
// (its file renamed). The returned function continues the processes still
// stopped, waits until each runs (at most a minute), ends the watch, and
// reports how many stops there were, each continued.
func Resume(dir string, returns int, hold time.Duration) (stop func() int) {
	done, resumed := make(chan struct{}), make(chan int)
	go func() {
		w := &resumer{dir: dir, seen: map[string]sighting{}, sent: map[string]bool{}}
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		quit, deadline := done, (<-chan time.Time)(nil)
		for {
			select {
			case <-quit:
				quit, returns, deadline = nil, -1, time.After(time.Minute)
			case <-deadline:
				resumed <- w.continued()
				return
			case <-tick.C:
			}
			if !w.look(returns, hold) && returns < 0 {
				resumed <- w.continued()
				return
			}
		}
	}()
	return func() int { close(done); return <-resumed }
}

// resumer is Resume's state: when it first saw each stopped process's
// file, and which it sent a SIGCONT.
type resumer struct {
	dir  string
	seen map[string]sighting
	sent map[string]bool
}

// sighting is when a stopped process's file was first seen, and how many
// answers had been recorded then.
type sighting struct {
	at       time.Time
	answered int
}

// continued counts the stops that ended in a SIGCONT.
func (w *resumer) continued() int {
	names, _ := filepath.Glob(filepath.Join(w.dir, "continued-*"))
	return len(names)
}

// look continues each stopped process whose others have recorded returns
// more answers since it was first seen, or that has waited hold, or every
// one if returns is negative; it forgets one that no longer exists, and
// reports whether any is stopped.
func (w *resumer) look(returns int, hold time.Duration) bool {
	names, _ := filepath.Glob(filepath.Join(w.dir, "stopped-*"))
	now, answered := time.Now(), -1
	for _, name := range names {
		if answered < 0 {
			answered = countReturns(w.dir)
		}
		first, ok := w.seen[name]
		if !ok {
			first = sighting{now, answered}
			w.seen[name] = first
		}
		if !w.sent[name] && returns >= 0 && now.Sub(first.at) < hold && answered-first.answered < returns {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(filepath.Base(name), "-")[1])
		switch err := unix.Kill(pid, unix.SIGCONT); {
		case err == nil:
			w.sent[name] = true
		case err == unix.ESRCH || pid <= 0: // gone, killed while stopped: nothing to continue
			os.Remove(name)
		}
	}
	return len(names) > 0
}

// countReturns counts the returns recorded in dir so far.
func countReturns(dir string) int {
	files, _ := filepath.Glob(filepath.Join(dir, "h-*.jsonl"))
	n := 0
	for _, f := range files {
		b, _ := os.ReadFile(f)
		n += bytes.Count(b, []byte(`"ret":`))
	}
	return n
}
