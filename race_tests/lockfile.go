//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	if _, err := a.Expect("locked"); err != nil {
		return Result{}, err
	}
	b, err := child("B", roleLockWait, path)
	if err != nil {
		return Result{}, err
	}
	defer b.Kill()
	if _, err := b.Expect("opened"); err != nil { // B holds a descriptor, waits in flock
		return Result{}, err
	}
	if err := a.Send("go"); err != nil { // A unlocks (and unlinks)
		return Result{}, err
	}
	if _, err := a.Expect("released"); err != nil {
		return Result{}, err
	}
	if _, err := b.Expect("locked"); err != nil {
		return Result{}, err
	}
	holders, err := holdersWithC(path)
	if err != nil {
		return Result{}, err
	}
	if err := closeAll(a, b); err != nil {
		return Result{}, err
	}
	if unlink {
		return result("unlink lock file after unlock", "2 holders at once", fmt.Sprintf("%d holders at once", holders)), nil
	}
	return result("keep the lock file", "1 holder at once", fmt.Sprintf("%d holder at once", holders)), nil
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
	if _, err := a.Expect("locked"); err != nil {
		return Result{}, err
	}
	state := algorithm.Fixed{Count: 7, ResetAt: demoNow().Unix() + 3600}.Append(nil)
	if rename {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, state, 0o600); err != nil {
			return Result{}, err
		}
		if err := os.Rename(tmp, path); err != nil {
			return Result{}, err
		}
	} else if err := os.WriteFile(path, state, 0o600); err != nil { // in place, as the holder would
		return Result{}, err
	}
	holders, err := holdersWithC(path)
	if err != nil {
		return Result{}, err
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
	if rename {
		return result("replace locked file by rename", "2 holders at once", fmt.Sprintf("%d holders at once", holders)), nil
	}
	return result("write in place under the lock", "1 holder at once", fmt.Sprintf("%d holder at once", holders)), nil
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
