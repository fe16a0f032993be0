//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ratelab/ratelab/algorithm"
	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/internal/claim"
	"github.com/ratelab/ratelab/internal/seqchart"
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

// holdersWithC starts C, which tries the lock on path once without
// waiting, while one process already holds "the" lock: it returns 2 if C
// got a lock too, with the inode C locked, or 1 if C found it busy.
func holdersWithC(path string) (int, string, error) {
	c, err := child("C", roleLockTry, path)
	if err != nil {
		return 0, "", err
	}
	defer c.Kill()
	says, err := c.Expect("")
	if err != nil {
		return 0, "", err
	}
	if err := c.Close(); err != nil {
		return 0, "", err
	}
	if ino, ok := strings.CutPrefix(says, "locked "); ok {
		return 2, ino, nil
	}
	return 1, "", nil
}

// waitsBehindLock checks that b, which announced it is taking the lock
// that a holds, stays silent — it cannot have read — and then lets a go on.
func waitsBehindLock(b, a *childproc.Proc) error {
	if _, err := b.Expect("locking"); err != nil {
		return err
	}
	if !b.Quiet(50 * time.Millisecond) {
		return errors.New("racetests: B read the state while A held the lock")
	}
	return a.Send("go")
}

// trace records what a choreography observed, step by step, for its
// sequence diagram.
type trace []seqchart.Step

func (t *trace) add(lane int, bad bool, format string, args ...any) {
	*t = append(*t, seqchart.Step{Lane: lane, Text: fmt.Sprintf(format, args...), Bad: bad})
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

	a, err := child("A", roleCounter, path, env...)
	if err != nil {
		return Result{}, err
	}
	defer a.Kill()
	if lock {
		if _, err := a.Expect("locking"); err != nil {
			return Result{}, err
		}
	}
	readA, err := a.Expect("read count=") // A has read 0 and waits
	if err != nil {
		return Result{}, err
	}
	var tr trace // lanes: A, B, the file
	tr.add(0, false, "reads count %s", readA)
	b, err := child("B", roleCounter, path, env...)
	if err != nil {
		return Result{}, err
	}
	defer b.Kill()
	if lock {
		if err := waitsBehindLock(b, a); err != nil { // then A writes 1 and unlocks
			return Result{}, err
		}
	}
	readB, err := b.Expect("read count=") // without a lock: B read 0 too
	if err != nil {
		return Result{}, err
	}
	if !lock {
		if err := a.Send("go"); err != nil { // A writes 1
			return Result{}, err
		}
	}
	wroteA, err := a.Expect("result count=")
	if err != nil {
		return Result{}, err
	}
	if lock { // A wrote before B could read
		tr.add(0, false, "writes count %s, unlocks", wroteA)
		tr.add(2, false, "count %s", wroteA)
		tr.add(1, false, "gets the lock, reads count %s", readB)
	} else {
		tr.add(1, false, "reads count %s", readB)
		tr.add(0, false, "writes count %s", wroteA)
		tr.add(2, false, "count %s", wroteA)
	}
	if err := b.Send("go"); err != nil { // B writes its own read + 1
		return Result{}, err
	}
	wroteB, err := b.Expect("result count=")
	if err != nil {
		return Result{}, err
	}
	tr.add(1, false, "writes count %s", wroteB)
	if err := closeAll(a, b); err != nil {
		return Result{}, err
	}
	final, err := ReadCount(path)
	if err != nil {
		return Result{}, err
	}

	name, want := "lost update, lock-free", "2 hits → count 1 (1 lost)"
	if lock {
		name, want = "lost update, flock", "2 hits → count 2 (0 lost)"
	}
	got := fmt.Sprintf("2 hits → count %d (%d lost)", final, 2-final)
	if final < 2 {
		tr.add(2, true, "count %d: A's hit is gone", final)
	} else {
		tr.add(2, false, "count %d", final)
	}
	r := result(name, want, got)
	r.Detail = fmt.Sprintf("A read %s, B read %s", readA, readB)
	r.Trace = tr
	return r, nil
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
	a, err := child("A", roleCounter, path, counterEnv(lock, order, "mid-write")...)
	if err != nil {
		return Result{}, err
	}
	defer a.Kill()
	if lock {
		if _, err := a.Expect("locking"); err != nil {
			return Result{}, err
		}
	}
	if _, err := a.Expect("read count=5"); err != nil {
		return Result{}, err
	}
	if _, err := a.Expect("mid-write"); err != nil {
		return Result{}, err
	}
	var tr trace // lanes: A, B, the file
	tr.add(2, false, "count 5")
	tr.add(0, false, "reads count 5")
	if order == TruncateFirst {
		tr.add(0, false, "truncates the file to 0 bytes")
		tr.add(2, false, "empty")
	} else {
		tr.add(0, false, "writes count 6 over count 5")
		tr.add(2, false, "count 6")
	}
	b, err := child("B", roleCounter, path, counterEnv(lock, order, "")...)
	if err != nil {
		return Result{}, err
	}
	defer b.Kill()
	if lock {
		if err := waitsBehindLock(b, a); err != nil {
			return Result{}, err
		}
	}
	readB, err := b.Expect("read count=")
	if err != nil {
		return Result{}, err
	}
	resB, err := b.Expect("result count=")
	if err != nil {
		return Result{}, err
	}
	if lock {
		tr.add(0, false, "finishes its write, unlocks")
		tr.add(2, false, "count 6")
	}
	tr.add(1, readB == "0", "reads count %s", readB)
	tr.add(1, false, "writes count %s", resB)
	if resB == "1" {
		tr.add(2, true, "count 1: a new window")
	} else {
		tr.add(2, false, "count %s", resB)
	}
	if !lock {
		if err := a.Send("go"); err != nil {
			return Result{}, err
		}
	}
	resA, err := a.Expect("result count=")
	if err != nil {
		return Result{}, err
	}
	if !lock {
		tr.add(0, false, "finishes its write of count %s", resA)
	}
	if err := closeAll(a, b); err != nil {
		return Result{}, err
	}

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
	final, err := ReadCount(path)
	if err != nil {
		return Result{}, err
	}
	if final < 7 { // 5, A's hit and B's
		tr.add(2, true, "count %d: a hit is gone", final)
	} else {
		tr.add(2, false, "count %d", final)
	}
	r := result(name, want, got)
	r.Trace = tr
	return r, nil
}

// !-tornread

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}
