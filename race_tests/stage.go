//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/internal/seqchart"
)

// A stage is where one choreography runs: it starts the children, passes
// them go-aheads, reads their reports and records the steps for the
// sequence diagram. The first error sticks: every later step does
// nothing, and end returns it — bufio.Scanner's way — so that a
// choreography reads as the order of its steps.
type stage struct {
	procs []*childproc.Proc
	tr    trace
	err   error
}

// fail records err if it is the first error.
func (s *stage) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// start starts one of this package's children on path.
func (s *stage) start(name, role, path string, env ...string) *childproc.Proc {
	if s.err != nil {
		return nil
	}
	p, err := child(name, role, path, env...)
	s.fail(err)
	if p != nil {
		s.procs = append(s.procs, p)
	}
	return p
}

// expect returns what follows prefix on p's next report line.
func (s *stage) expect(p *childproc.Proc, prefix string) string {
	if s.err != nil {
		return ""
	}
	rest, err := p.Expect(prefix)
	s.fail(err)
	return rest
}

// expectIf is expect, only when cond holds.
func (s *stage) expectIf(cond bool, p *childproc.Proc, prefix string) {
	if cond {
		s.expect(p, prefix)
	}
}

// goAhead lets p take its next step.
func (s *stage) goAhead(p *childproc.Proc) {
	if s.err == nil {
		s.fail(p.Send("go"))
	}
}

// waitBehindLock checks that b, which announced it is taking the lock
// that a holds, stays silent — it cannot have read — and then lets a go on.
func (s *stage) waitBehindLock(b, a *childproc.Proc) {
	s.expect(b, "locking")
	if s.err == nil && !b.Quiet(50*time.Millisecond) {
		s.fail(errors.New("racetests: B read the state while A held the lock"))
	}
	s.goAhead(a)
}

// holdersWithC starts C, which tries the lock on path once without
// waiting, while one process already holds "the" lock: it returns 2 if C
// got a lock too, with the inode C locked, or 1 if C found it busy.
func (s *stage) holdersWithC(path string) (int, string) {
	if s.err != nil {
		return 0, ""
	}
	c, err := child("C", roleLockTry, path)
	if err != nil {
		s.fail(err)
		return 0, ""
	}
	defer c.Kill()
	says, err := c.Expect("")
	if err == nil {
		err = c.Close()
	}
	if err != nil {
		s.fail(err)
		return 0, ""
	}
	if ino, ok := strings.CutPrefix(says, "locked "); ok {
		return 2, ino
	}
	return 1, ""
}

// step records one step of the sequence diagram, on lane; bad marks what
// went wrong.
func (s *stage) step(lane int, bad bool, format string, args ...any) {
	s.tr.add(lane, bad, format, args...)
}

// end waits for every child to exit and returns the first error.
func (s *stage) end() error {
	if s.err == nil {
		s.fail(closeAll(s.procs...))
	}
	return s.err
}

// kill ends every child still running; a choreography defers it.
func (s *stage) kill() {
	for _, p := range s.procs {
		p.Kill()
	}
}

// trace records what a choreography observed, step by step, for its
// sequence diagram.
type trace []seqchart.Step

func (t *trace) add(lane int, bad bool, format string, args ...any) {
	*t = append(*t, seqchart.Step{Lane: lane, Text: fmt.Sprintf(format, args...), Bad: bad})
}
