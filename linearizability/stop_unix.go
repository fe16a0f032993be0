//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package linearizability

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// pause announces this process in the history directory, as a file
// "stopped-<pid>-<token>", and stops it with SIGSTOP; it returns once
// Resume has continued it. The calling thread stops on its way back
// from kill(2), before it runs another instruction of the hit.
func (r *Recorder) pause(token int) error {
	name := filepath.Join(r.dir, fmt.Sprintf("stopped-%d-%d", os.Getpid(), token))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("linearizability: %w", err)
	}
	f.Close()
	return unix.Kill(os.Getpid(), unix.SIGSTOP)
}

// Resume continues, with SIGCONT, every process of the history directory
// dir that stopped itself on a stop token: once the other processes have
// recorded returns more answers since it stopped, or after hold if they
// cannot (a single process serves them all, or they wait for its lock).
// The returned function ends the watch, continues any process still
// stopped, and reports how many were continued.
func Resume(dir string, returns int, hold time.Duration) (stop func() int) {
	done, resumed := make(chan struct{}), make(chan int)
	go func() {
		seen := map[string]time.Time{}
		base := map[string]int{}
		n := 0
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				n += continueAll(dir, seen, base, -1, 0)
				resumed <- n
				return
			case <-tick.C:
				n += continueAll(dir, seen, base, returns, hold)
			}
		}
	}()
	return func() int { close(done); return <-resumed }
}

// continueAll continues each stopped process of dir whose others have
// recorded returns more answers since it was first seen, or that has
// waited hold; every one if returns is negative. It reports how many.
func continueAll(dir string, seen map[string]time.Time, base map[string]int, returns int, hold time.Duration) int {
	names, _ := filepath.Glob(filepath.Join(dir, "stopped-*"))
	if len(names) == 0 {
		return 0
	}
	now, answered := time.Now(), countReturns(dir)
	n := 0
	for _, name := range names {
		if _, ok := seen[name]; !ok {
			seen[name], base[name] = now, answered
		}
		if returns >= 0 && answered-base[name] < returns && now.Sub(seen[name]) < hold {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(filepath.Base(name), "-")[1])
		if os.Remove(name) == nil && pid > 0 && unix.Kill(pid, unix.SIGCONT) == nil {
			n++
		}
	}
	return n
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
