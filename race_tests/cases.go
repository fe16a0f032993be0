//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ratelab/ratelab/algorithm"
	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/internal/claim"
)

// Result is one demonstration: what it claims, what it saw.
type Result = claim.Claim

func result(name, expected, observed string) Result {
	return Result{Case: name, Expected: expected, Observed: observed}
}

// child starts one of this package's children on path.
func child(name, role, path string, env ...string) (*childproc.Proc, error) {
	return childproc.Start(name, role, append([]string{"RATELAB_RACE_PATH=" + path}, env...)...)
}

// closeAll waits for children, joining their errors.
func closeAll(ps ...*childproc.Proc) error {
	var errs []error
	for _, p := range ps {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	return errors.Join(errs...)
}

func counterEnv(lock bool, order WriteOrder, pause string) []string {
	l := "0"
	if lock {
		l = "1"
	}
	return []string{"RATELAB_RACE_LOCK=" + l, "RATELAB_RACE_ORDER=" + order.String(), "RATELAB_RACE_PAUSE=" + pause}
}

// !+lostupdate

// LostUpdate runs two processes through one read-modify-write each, in
// the order that loses an update without a lock: A reads, B reads, A
// writes, B writes. With lock true, B cannot read until A has written and
// unlocked, so the same order of go-aheads loses nothing.
func LostUpdate(dir string, lock bool) (Result, error) {
	path := filepath.Join(dir, "state.json")
	env := counterEnv(lock, WriteThenTruncate, "after-read")
	var s stage // lanes: A, B, the file
	defer s.kill()

	a := s.start("A", roleCounter, path, env...)
	s.expectIf(lock, a, "locking")
	readA := s.expect(a, "read count=") // A has read 0 and waits
	s.step(0, false, "reads count %s", readA)
	b := s.start("B", roleCounter, path, env...)
	if lock {
		s.waitBehindLock(b, a) // then A writes 1 and unlocks
	}
	readB := s.expect(b, "read count=") // without a lock: B read 0 too
	if !lock {
		s.goAhead(a) // A writes 1
	}
	wroteA := s.expect(a, "result count=")
	if lock { // A wrote before B could read
		s.step(0, false, "writes count %s, unlocks", wroteA)
		s.step(2, false, "count %s", wroteA)
		s.step(1, false, "gets the lock, reads count %s", readB)
	} else {
		s.step(1, false, "reads count %s", readB)
		s.step(0, false, "writes count %s", wroteA)
		s.step(2, false, "count %s", wroteA)
	}
	s.goAhead(b) // B writes its own read + 1
	s.step(1, false, "writes count %s", s.expect(b, "result count="))
	if err := s.end(); err != nil {
		return Result{}, err
	}
	final, err := ReadCount(path)
	if err != nil {
		return Result{}, err
	}
	r := lostUpdateResult(lock, final, &s.tr)
	r.Detail = fmt.Sprintf("A read %s, B read %s", readA, readB)
	return r, nil
}

// lostUpdateResult judges a lost-update run whose file ended at count
// final, and draws that last state.
func lostUpdateResult(lock bool, final int64, tr *trace) Result {
	name, want := "lost update, lock-free", "2 hits → count 1 (1 lost)"
	if lock {
		name, want = "lost update, flock", "2 hits → count 2 (0 lost)"
	}
	if final < 2 {
		tr.add(2, true, "count %d: A's hit is gone", final)
	} else {
		tr.add(2, false, "count %d", final)
	}
	r := result(name, want, fmt.Sprintf("2 hits → count %d (%d lost)", final, 2-final))
	r.Trace = *tr
	return r
}

// !-lostupdate

// !+tornread

// TornRead stops process A halfway through writing count 6 over count 5
// and lets B read the file then. With the original's truncate-first write
// and no lock, B finds an empty file and starts a new window: count 1.
// With fixed_filestore's write order B finds A's new count; with the lock,
// B waits until A is done.
func TornRead(dir string, order WriteOrder, lock bool) (Result, error) {
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, algorithm.Fixed{Count: 5, ResetAt: demoNow().Unix() + 3600}.Append(nil), 0o600); err != nil {
		return Result{}, err
	}
	var s stage // lanes: A, B, the file
	defer s.kill()

	a := s.start("A", roleCounter, path, counterEnv(lock, order, "mid-write")...)
	s.expectIf(lock, a, "locking")
	s.expect(a, "read count=5")
	s.expect(a, "mid-write")
	s.stepsToMidWrite(order)
	b := s.start("B", roleCounter, path, counterEnv(lock, order, "")...)
	if lock {
		s.waitBehindLock(b, a)
	}
	readB := s.expect(b, "read count=")
	resB := s.expect(b, "result count=")
	if lock {
		s.step(0, false, "finishes its write, unlocks")
		s.step(2, false, "count 6")
	}
	s.step(1, readB == "0", "reads count %s", readB)
	s.step(1, false, "writes count %s", resB)
	if resB == "1" {
		s.step(2, true, "count 1: a new window")
	} else {
		s.step(2, false, "count %s", resB)
	}
	if !lock {
		s.goAhead(a)
	}
	resA := s.expect(a, "result count=")
	if !lock {
		s.step(0, false, "finishes its write of count %s", resA)
	}
	if err := s.end(); err != nil {
		return Result{}, err
	}
	final, err := ReadCount(path)
	if err != nil {
		return Result{}, err
	}
	return tornReadResult(order, lock, readB, resB, final, &s.tr), nil
}

// stepsToMidWrite draws the torn read up to A's stop: what A did and
// what the file holds then.
func (s *stage) stepsToMidWrite(order WriteOrder) {
	s.step(2, false, "count 5")
	s.step(0, false, "reads count 5")
	if order == TruncateFirst {
		s.step(0, false, "truncates the file to 0 bytes")
		s.step(2, false, "empty")
	} else {
		s.step(0, false, "writes count 6 over count 5")
		s.step(2, false, "count 6")
	}
}

// tornReadResult judges a torn-read run in which B read readB and wrote
// resB, and the file ended at count final; it draws that last state.
func tornReadResult(order WriteOrder, lock bool, readB, resB string, final int64, tr *trace) Result {
	name := fmt.Sprintf("torn read, %s, lock-free", order)
	want := "B reads 6, counts 7"
	switch {
	case lock:
		name = fmt.Sprintf("torn read, %s, flock", order)
	case order == TruncateFirst:
		want = "B reads 0, counts 1 (window restarted)"
	}
	got := fmt.Sprintf("B reads %s, counts %s", readB, resB)
	if resB == "1" {
		got += " (window restarted)"
	}
	if final < 7 { // 5, A's hit and B's
		tr.add(2, true, "count %d: a hit is gone", final)
	} else {
		tr.add(2, false, "count %d", final)
	}
	r := result(name, want, got)
	r.Trace = *tr
	return r
}

// !-tornread

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}
