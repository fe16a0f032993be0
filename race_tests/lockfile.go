//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ratelab/ratelab/algorithm"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
)

// UnlinkAfterUnlock shows the second reference article's mistake: removing
// the lock file after unlocking. B opened the file before it was removed
// and gets the lock on the removed inode; C creates a new file and gets a
// lock on that: two holders at once. Without the unlink, C finds it busy.
func UnlinkAfterUnlock(dir string, unlink bool) (Result, error) {
	path := filepath.Join(dir, "demo.lock")
	u := "0"
	if unlink {
		u = "1"
	}
	var s stage // lanes: A, B, C, the path
	defer s.kill()
	ino := inodes{}

	a := s.start("A", roleLockHold, path, "RATELAB_RACE_UNLINK="+u)
	inoA := ino.name(s.expect(a, "locked"))
	s.step(3, false, "demo.lock → %s", inoA)
	s.step(0, false, "locks %s", inoA)
	b := s.start("B", roleLockWait, path)
	inoB := ino.name(s.expect(b, "opened")) // B holds a descriptor, waits in flock
	s.step(1, false, "opens %s, waits for its lock", inoB)
	s.goAhead(a) // A unlocks (and unlinks)
	s.expect(a, "released")
	if unlink {
		s.step(0, false, "unlocks, then unlinks demo.lock")
		s.step(3, false, "demo.lock → nothing")
	} else {
		s.step(0, false, "unlocks")
	}
	s.step(1, false, "gets the lock on %s", ino.name(s.expect(b, "locked")))
	holders, inoC := s.holdersWithC(path)
	if holders == 2 {
		s.step(3, false, "demo.lock → %s (C made it)", ino.name(inoC))
		s.step(2, true, "opens demo.lock, locks %s", ino.name(inoC))
	} else {
		s.step(2, false, "tries demo.lock: busy")
	}
	if err := s.end(); err != nil {
		return Result{}, err
	}
	return holdersResult("keep the lock file", "unlink lock file after unlock", unlink, holders, s.tr), nil
}

// holdersResult judges a run in which holders processes held "the" lock
// at once: one, as it should be, under the name right; two under pitfall,
// the name of the run that makes the mistake.
func holdersResult(right, pitfall string, mistake bool, holders int, tr trace) Result {
	r := result(right, "1 holder at once", fmt.Sprintf("%d holder at once", holders))
	if mistake {
		r = result(pitfall, "2 holders at once", fmt.Sprintf("%d holders at once", holders))
	}
	r.Trace = tr
	return r
}

// inodes names inode numbers #1, #2, … in the order they first appear, so
// that a chart of a run reads the same on every run.
type inodes map[string]int

func (m inodes) name(ino string) string {
	ino = strings.TrimPrefix(ino, "inode=")
	if _, ok := m[ino]; !ok {
		m[ino] = len(m) + 1
	}
	return fmt.Sprintf("inode #%d", m[ino])
}

// ReplaceByRename shows the "safe write" that is unsafe under a lock:
// writing a temporary file and renaming it over the locked one. A still
// holds its lock — on the old inode, no longer at the path — and C locks
// the new file at once. Writing in place, under the lock, C finds it busy.
func ReplaceByRename(dir string, rename bool) (Result, error) {
	path := filepath.Join(dir, "state.json")
	var s stage // lanes: A, the writer, C, the path
	defer s.kill()
	ino := inodes{}

	a := s.start("A", roleLockHold, path)
	inoA := ino.name(s.expect(a, "locked"))
	s.step(3, false, "state.json → %s", inoA)
	s.step(0, false, "locks %s", inoA)
	s.writeState(path, rename, ino)
	holders, inoC := s.holdersWithC(path)
	if holders == 2 {
		s.step(2, true, "opens state.json, locks %s", ino.name(inoC))
		s.step(0, true, "still holds %s, now nameless", inoA)
	} else {
		s.step(2, false, "tries state.json: busy")
	}
	s.goAhead(a)
	s.expect(a, "released")
	if err := s.end(); err != nil {
		return Result{}, err
	}
	return holdersResult("write in place under the lock", "replace locked file by rename", rename, holders, s.tr), nil
}

// writeState is the writer of ReplaceByRename: it writes a new state to
// path while A holds the lock, by a temporary file renamed over path if
// rename is true, else in place, as the holder would.
func (s *stage) writeState(path string, rename bool, ino inodes) {
	if s.err != nil {
		return
	}
	state := algorithm.Fixed{Count: 7, ResetAt: demoNow().Unix() + 3600}.Append(nil)
	if !rename {
		s.fail(os.WriteFile(path, state, 0o600))
		s.step(1, false, "writes state.json in place (%s)", ino.name(fmt.Sprint(pathInode(path))))
		return
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, state, 0o600); err != nil {
		s.fail(err)
		return
	}
	s.step(1, false, "writes state.json.tmp (%s)", ino.name(fmt.Sprint(pathInode(tmp))))
	s.fail(os.Rename(tmp, path))
	s.step(1, false, "renames it over state.json")
	s.step(3, false, "state.json → %s", ino.name(fmt.Sprint(pathInode(path))))
}

// !+pausedhit

// PausedHit is the lost update against fixed_filestore itself. A is a
// hit paused between its read and its write, holding the state file's
// flock(2) as the store does; B is a store hit with a bounded wait (200
// ms) that fails closed. With the store's lock, B waits, gives up and is
// told so (503): nothing it was told is lost. Take the lock out of the
// store and B reads A's old count, writes, and A then overwrites it: a hit
// B was told counted is gone — on every run, because A stays paused until
// B has answered.
func PausedHit(dir string) (Result, error) {
	path, err := stateAtFive(dir)
	if err != nil {
		return Result{}, err
	}
	var s stage
	defer s.kill()

	a := s.start("A", roleCounter, path, counterEnv(true, WriteThenTruncate, "after-read")...)
	s.expect(a, "locking")
	s.expect(a, "read count=5") // A holds the lock, paused
	b := s.start("B", roleStoreHit, dir, "RATELAB_RACE_KEY="+StressKey, "RATELAB_RACE_WAIT=200ms")
	answerB := s.expect(b, "result ") // "busy", or the count B wrote

	s.goAhead(a) // A writes its 6
	s.expect(a, "result count=")
	if err := s.end(); err != nil {
		return Result{}, err
	}
	final, err := ReadCount(path)
	if err != nil {
		return Result{}, err
	}
	told := int64(6) // A's hit, on top of 5
	got := "B waited, gave up (503); "
	if answerB != "busy" {
		told, got = 7, "B counted while A held the state; "
	}
	got += fmt.Sprintf("count %d, %d lost", final, told-final)
	return result("fixed_filestore against a hit paused mid-write", "B waited, gave up (503); count 6, 0 lost", got), nil
}

// stateAtFive counts five hits on StressKey with a fixed_filestore in dir
// and returns the path of its state file.
func stateAtFive(dir string) (string, error) {
	store, err := fixedfilestore.New(dir, fixedfilestore.Options{})
	if err != nil {
		return "", err
	}
	for range 5 {
		if _, err := store.TakeAt(context.Background(), CountRule(), StressKey, demoNow()); err != nil {
			return "", err
		}
	}
	return store.Path(CountRule(), StressKey), nil
}

// !-pausedhit

// HolderKilled kills (SIGKILL) a process that holds a state file's lock.
// The kernel releases a flock(2) lock when the last descriptor of its open
// file closes, and a dying process closes all of its descriptors: the
// waiting hitter goes on at once and its hit is counted.
func HolderKilled(dir string) (Result, time.Duration, error) {
	path, err := stateAtFive(dir)
	if err != nil {
		return Result{}, 0, err
	}
	a, err := child("A", roleHoldState, path)
	if err != nil {
		return Result{}, 0, err
	}
	defer a.Kill()
	if _, err := a.Expect("locked"); err != nil {
		return Result{}, 0, err
	}
	b, err := child("B", roleStoreHit, dir, "RATELAB_RACE_KEY="+StressKey)
	if err != nil {
		return Result{}, 0, err
	}
	defer b.Kill()
	if !b.Quiet(50 * time.Millisecond) { // a store without its lock: B did not wait
		count, err := b.Expect("result count=")
		if err != nil {
			return Result{}, 0, err
		}
		return result("lock holder SIGKILLed", "B goes on, count 6 (0 lost)",
			fmt.Sprintf("B did not wait for A's lock: count %s", count)), 0, b.Close()
	}
	killed := time.Now()
	a.Kill()
	count, err := b.Expect("result count=")
	waited := time.Since(killed)
	if err != nil {
		return Result{}, 0, err
	}
	if err := b.Close(); err != nil {
		return Result{}, 0, err
	}
	r := result("lock holder SIGKILLed", "B goes on, count 6 (0 lost)", fmt.Sprintf("B goes on, count %s (%d lost)", count, 6-atoi(count)))
	return r, waited, nil
}
