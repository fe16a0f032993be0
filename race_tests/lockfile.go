//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"context"
	"errors"
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
	if !b.Quiet(50 * time.Millisecond) {
		return Result{}, 0, errors.New("racetests: B finished its hit while A held the lock")
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
