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
	a, err := child("A", roleLockHold, path, "RATELAB_RACE_UNLINK="+u)
	if err != nil {
		return Result{}, err
	}
	defer a.Kill()
	inoA, err := a.Expect("locked")
	if err != nil {
		return Result{}, err
	}
	var tr trace // lanes: A, B, C, the path
	ino := inodes{}
	tr.add(3, false, "demo.lock → %s", ino.name(inoA))
	tr.add(0, false, "locks %s", ino.name(inoA))
	b, err := child("B", roleLockWait, path)
	if err != nil {
		return Result{}, err
	}
	defer b.Kill()
	inoB, err := b.Expect("opened") // B holds a descriptor, waits in flock
	if err != nil {
		return Result{}, err
	}
	tr.add(1, false, "opens %s, waits for its lock", ino.name(inoB))
	if err := a.Send("go"); err != nil { // A unlocks (and unlinks)
		return Result{}, err
	}
	if _, err := a.Expect("released"); err != nil {
		return Result{}, err
	}
	if unlink {
		tr.add(0, false, "unlocks, then unlinks demo.lock")
		tr.add(3, false, "demo.lock → nothing")
	} else {
		tr.add(0, false, "unlocks")
	}
	if inoB, err = b.Expect("locked"); err != nil {
		return Result{}, err
	}
	tr.add(1, false, "gets the lock on %s", ino.name(inoB))
	holders, inoC, err := holdersWithC(path)
	if err != nil {
		return Result{}, err
	}
	if holders == 2 {
		tr.add(3, false, "demo.lock → %s (C made it)", ino.name(inoC))
		tr.add(2, true, "opens demo.lock, locks %s", ino.name(inoC))
	} else {
		tr.add(2, false, "tries demo.lock: busy")
	}
	if err := closeAll(a, b); err != nil {
		return Result{}, err
	}
	r := result("keep the lock file", "1 holder at once", fmt.Sprintf("%d holder at once", holders))
	if unlink {
		r = result("unlink lock file after unlock", "2 holders at once", fmt.Sprintf("%d holders at once", holders))
	}
	r.Trace = tr
	return r, nil
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
	a, err := child("A", roleLockHold, path)
	if err != nil {
		return Result{}, err
	}
	defer a.Kill()
	inoA, err := a.Expect("locked")
	if err != nil {
		return Result{}, err
	}
	var tr trace // lanes: A, the writer, C, the path
	ino := inodes{}
	tr.add(3, false, "state.json → %s", ino.name(inoA))
	tr.add(0, false, "locks %s", ino.name(inoA))
	state := algorithm.Fixed{Count: 7, ResetAt: demoNow().Unix() + 3600}.Append(nil)
	if rename {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, state, 0o600); err != nil {
			return Result{}, err
		}
		tr.add(1, false, "writes state.json.tmp (%s)", ino.name(fmt.Sprint(pathInode(tmp))))
		if err := os.Rename(tmp, path); err != nil {
			return Result{}, err
		}
		tr.add(1, false, "renames it over state.json")
		tr.add(3, false, "state.json → %s", ino.name(fmt.Sprint(pathInode(path))))
	} else if err := os.WriteFile(path, state, 0o600); err != nil { // in place, as the holder would
		return Result{}, err
	} else {
		tr.add(1, false, "writes state.json in place (%s)", ino.name(fmt.Sprint(pathInode(path))))
	}
	holders, inoC, err := holdersWithC(path)
	if err != nil {
		return Result{}, err
	}
	if holders == 2 {
		tr.add(2, true, "opens state.json, locks %s", ino.name(inoC))
		tr.add(0, true, "still holds %s, now nameless", ino.name(inoA))
	} else {
		tr.add(2, false, "tries state.json: busy")
	}
	if err := a.Send("go"); err != nil {
		return Result{}, err
	}
	if _, err := a.Expect("released"); err != nil {
		return Result{}, err
	}
	if err := closeAll(a); err != nil {
		return Result{}, err
	}
	r := result("write in place under the lock", "1 holder at once", fmt.Sprintf("%d holder at once", holders))
	if rename {
		r = result("replace locked file by rename", "2 holders at once", fmt.Sprintf("%d holders at once", holders))
	}
	r.Trace = tr
	return r, nil
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
	store, err := fixedfilestore.New(dir, fixedfilestore.Options{})
	if err != nil {
		return Result{}, err
	}
	for range 5 {
		if _, err := store.TakeAt(context.Background(), CountRule(), StressKey, demoNow()); err != nil {
			return Result{}, err
		}
	}
	path := store.Path(CountRule(), StressKey)
	a, err := child("A", roleCounter, path, counterEnv(true, WriteThenTruncate, "after-read")...)
	if err != nil {
		return Result{}, err
	}
	defer a.Kill()
	if _, err := a.Expect("locking"); err != nil {
		return Result{}, err
	}
	if _, err := a.Expect("read count=5"); err != nil { // A holds the lock, paused
		return Result{}, err
	}
	b, err := child("B", roleStoreHit, dir, "RATELAB_RACE_KEY="+StressKey, "RATELAB_RACE_WAIT=200ms")
	if err != nil {
		return Result{}, err
	}
	defer b.Kill()
	answerB, err := b.Expect("result ") // "busy", or the count B wrote
	if err != nil {
		return Result{}, err
	}
	if err := a.Send("go"); err != nil { // A writes its 6
		return Result{}, err
	}
	if _, err := a.Expect("result count="); err != nil {
		return Result{}, err
	}
	if err := closeAll(a, b); err != nil {
		return Result{}, err
	}
	final, err := ReadCount(path)
	if err != nil {
		return Result{}, err
	}
	told := int64(6) // A's hit, on top of 5
	if answerB != "busy" {
		told = 7
	}
	got := fmt.Sprintf("count %d, %d lost", final, told-final)
	if answerB == "busy" {
		got = "B waited, gave up (503); " + got
	} else {
		got = "B counted while A held the state; " + got
	}
	return result("fixed_filestore against a hit paused mid-write", "B waited, gave up (503); count 6, 0 lost", got), nil
}

// !-pausedhit

// HolderKilled kills (SIGKILL) a process that holds a state file's lock.
// The kernel releases a flock(2) lock when the last descriptor of its open
// file closes, and a dying process closes all of its descriptors: the
// waiting hitter goes on at once and its hit is counted.
func HolderKilled(dir string) (Result, time.Duration, error) {
	store, err := fixedfilestore.New(dir, fixedfilestore.Options{})
	if err != nil {
		return Result{}, 0, err
	}
	for range 5 {
		if _, err := store.TakeAt(context.Background(), CountRule(), StressKey, demoNow()); err != nil {
			return Result{}, 0, err
		}
	}
	a, err := child("A", roleHoldState, store.Path(CountRule(), StressKey))
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
