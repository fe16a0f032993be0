// Package childproc runs the current binary again as a child process and
// talks to it in lines: Go's helper-process idiom, with the child's stdout
// as its report channel and its stdin as a go-ahead channel.
//
// A child that exits early, crashes or prints something unexpected makes
// every call fail with an error that quotes its stderr: a child that did
// not run can never pass in silence.
package childproc

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/ratelab/ratelab/internal/syncbuf"
)

// Timeout bounds every wait for a line from a child: a guard against a
// child that hangs, long enough for one that is only slow on a machine
// other jobs keep busy (10 s was not: a lock-free stress child of 500
// hits missed it under two CPU loops and other tests' floods).
// A child busy for longer says so with a Pulse, and Expect waits on.
const Timeout = time.Minute

// aliveLine is the line a Pulse prints: Expect passes over it.
const aliveLine = "alive"

// Proc is a running child.
type Proc struct {
	Cmd    *exec.Cmd
	name   string
	stdin  io.WriteCloser
	lines  chan string
	stderr *syncbuf.Buffer
	done   chan struct{}
	stash  *string // a line read by Quiet, not yet returned by Expect
	// timeout bounds Expect's wait for a line: Timeout, shorter in tests.
	timeout time.Duration
}

// Start re-executes the current binary (os.Executable) as a child of role,
// with env appended to the parent's environment (and Env(role)). name
// labels the child in errors.
func Start(name, role string, env ...string) (*Proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return StartExe(name, exe, role, nil, env...)
}

// StartExe is Start for another binary, whose stderr is also copied to
// stderrTee if it is not nil.
func StartExe(name, exe, role string, stderrTee io.Writer, env ...string) (*Proc, error) {
	return StartExeFiles(name, exe, role, stderrTee, nil, env...)
}

// StartExeFiles is StartExe with files open in the child from descriptor
// 3 on (exec.Cmd's ExtraFiles).
func StartExeFiles(name, exe, role string, stderrTee io.Writer, files []*os.File, env ...string) (*Proc, error) {
	cmd := exec.Command(exe)
	cmd.ExtraFiles = files
	cmd.Env = append(append(os.Environ(), Env(role)...), env...)
	p := &Proc{Cmd: cmd, name: name, lines: make(chan string, 64), stderr: &syncbuf.Buffer{Tee: stderrTee, Limit: 64 << 10}, done: make(chan struct{}), timeout: Timeout}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("childproc: start %s: %w", name, err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	return p, nil
}

// Expect waits for the child's next line and returns what follows prefix
// on it. Any other line, an exit, or silence past Timeout is an error; a
// Pulse's line is passed over, and the wait starts again after it.
func (p *Proc) Expect(prefix string) (string, error) {
	if p.stash != nil {
		line := *p.stash
		p.stash = nil
		return p.match(line, prefix)
	}
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				<-p.done
				err := p.Cmd.Wait()
				return "", fmt.Errorf("childproc: %s exited (%v) before printing %q; stderr: %s", p.name, err, prefix, p.Stderr())
			}
			if line != aliveLine {
				return p.match(line, prefix)
			}
		case <-time.After(p.timeout):
			return "", fmt.Errorf("childproc: %s printed nothing within %v, expected %q; stderr: %s", p.name, p.timeout, prefix, p.Stderr())
		}
	}
}

// Quiet reports whether the child stays silent for d. A line that does
// arrive is kept for the next Expect. It is how a parent shows that a child
// is still blocked: a child that got past a lock would have said so.
func (p *Proc) Quiet(d time.Duration) bool {
	if p.stash != nil {
		return false
	}
	select {
	case line, ok := <-p.lines:
		if ok && line != aliveLine {
			p.stash = &line
		}
		return false
	case <-time.After(d):
		return true
	}
}

func (p *Proc) match(line, prefix string) (string, error) {
	rest, found := strings.CutPrefix(line, prefix)
	if !found {
		return "", fmt.Errorf("childproc: %s printed %q, expected %q", p.name, line, prefix)
	}
	return strings.TrimSpace(rest), nil
}

// Send writes one line to the child's stdin.
func (p *Proc) Send(line string) error {
	_, err := io.WriteString(p.stdin, line+"\n")
	if err != nil {
		return fmt.Errorf("childproc: send to %s: %w", p.name, err)
	}
	return nil
}

// Finish closes the child's stdin — its signal to finish — and returns
// what follows prefix on its last report line, after it exited 0. A child
// that prints no such line is killed; one that exits non-zero is an error
// quoting its stderr.
func (p *Proc) Finish(prefix string) (string, error) {
	p.stdin.Close()
	rest, err := p.Expect(prefix)
	if err != nil {
		p.Kill()
		return "", err
	}
	return rest, p.Close()
}

// Close closes the child's stdin, waits for it to exit and returns its exit
// error, with its stderr.
func (p *Proc) Close() error {
	p.stdin.Close()
	for range p.lines {
	}
	<-p.done
	if err := p.Cmd.Wait(); err != nil {
		return fmt.Errorf("childproc: %s: %w; stderr: %s", p.name, err, p.Stderr())
	}
	return nil
}

// Kill ends the child at once and reaps it.
func (p *Proc) Kill() {
	p.Cmd.Process.Kill()
	p.stdin.Close()
	for range p.lines {
	}
	<-p.done
	p.Cmd.Wait()
}

// Exited is closed once the child has closed its standard output: when
// it exits, unless it closed its output first. Close or Kill reaps it.
func (p *Proc) Exited() <-chan struct{} { return p.done }

// Stderr returns what the child wrote to stderr so far.
func (p *Proc) Stderr() string { return strings.TrimSpace(p.stderr.String()) }

// Child-side helpers.

// Say prints one line on stdout for the parent.
func Say(format string, args ...any) { fmt.Printf(format+"\n", args...) }

// Pulse tells the parent that a child in a long loop is alive: Beat,
// called once per step, prints a line Expect passes over when a second
// has gone by since the last, so that a child slowed down by a busy
// machine is waited for while a step that hangs is still caught by
// Timeout. The zero value is ready and beats at the first call.
type Pulse struct {
	every time.Duration // 0: a second; shorter in tests
	last  time.Time
}

// Beat says the child is alive if a second has gone by since it last did.
func (p *Pulse) Beat() {
	every := cmp.Or(p.every, time.Second)
	if now := time.Now(); now.Sub(p.last) >= every {
		Say(aliveLine)
		p.last = now
	}
}

// WaitGo blocks until the parent sends a line (or closes stdin).
func WaitGo(r *bufio.Reader) { r.ReadString('\n') }
