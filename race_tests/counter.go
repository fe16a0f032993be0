//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/ratelab/ratelab/algorithm"
)

// WriteOrder is how a counter puts the new state into the file.
type WriteOrder int

const (
	// WriteThenTruncate writes at offset 0, then cuts the file to the new
	// length: fixed_filestore's order. The file is never empty.
	WriteThenTruncate WriteOrder = iota
	// TruncateFirst is the PHP original's order: ftruncate(0), then write.
	// Between the two the file is empty.
	TruncateFirst
)

// String names the write order.
func (w WriteOrder) String() string {
	if w == TruncateFirst {
		return "truncate-first"
	}
	return "write-then-truncate"
}

// BrokenCounter is the original's read-modify-write, written so that each
// of its ingredients can be taken away: with Lock false it is the
// lock-free store that loses updates, and it exposes the two instants a
// choreography needs to stop at. It uses fixed_filestore's on-disk format
// and the fixed window's step, algorithm.Fixed.Take, under CountRule.
// It is for demonstrations only; production code uses fixed_filestore.
type BrokenCounter struct {
	Path  string
	Lock  bool // take an exclusive flock(2) around the read-modify-write
	Order WriteOrder
	// AfterRead, if set, runs after the state is read and before anything
	// is written, with the count read.
	AfterRead func(count int64)
	// MidWrite, if set, runs halfway through the write: after the truncate
	// of TruncateFirst, after the write of WriteThenTruncate.
	MidWrite func()
}

// !+hitat

// HitAt counts one hit at now.
func (c *BrokenCounter) HitAt(now time.Time) (algorithm.Fixed, error) {
	f, err := os.OpenFile(c.Path, os.O_RDWR|os.O_CREATE, 0o600) // "c+": never O_TRUNC
	if err != nil {
		return algorithm.Fixed{}, err
	}
	defer f.Close()
	if c.Lock {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			return algorithm.Fixed{}, err
		}
		defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}

	prev := c.read(f, now)
	next, _, err := prev.Take(CountRule(), now)
	if err != nil {
		// A torn write can leave digits run together, a reset_at far
		// ahead: as the original, unreadable state is a new window.
		next, _, _ = algorithm.Fixed{}.Take(CountRule(), now)
	}
	if err := c.write(f, next.Append(nil)); err != nil {
		return next, fmt.Errorf("racetests: write %s: %w", c.Path, err)
	}
	return next, nil
}

// read returns the state in f, and tells AfterRead the count still live
// at now.
func (c *BrokenCounter) read(f *os.File, now time.Time) algorithm.Fixed {
	buf := make([]byte, 128)
	n, _ := f.ReadAt(buf, 0)
	prev, err := algorithm.DecodeFixed(buf[:n])
	if err != nil {
		prev = algorithm.Fixed{} // as the original: unreadable state is a new window
	}
	if c.AfterRead != nil {
		live := prev.Count
		if prev.ResetAt <= now.Unix() {
			live = 0
		}
		c.AfterRead(live)
	}
	return prev
}

// write puts out into f in c's write order, calling MidWrite halfway.
func (c *BrokenCounter) write(f *os.File, out []byte) error {
	midWrite := func() {
		if c.MidWrite != nil {
			c.MidWrite()
		}
	}
	if c.Order == TruncateFirst {
		if err := f.Truncate(0); err != nil {
			return err
		}
		midWrite() // the file is empty now
		_, err := f.WriteAt(out, 0)
		return err
	}
	if _, err := f.WriteAt(out, 0); err != nil {
		return err
	}
	midWrite() // the new state is in, the old one's tail may follow it
	return f.Truncate(int64(len(out)))
}

// !-hitat

// ReadCount returns the count in the state file at path, 0 if it is empty.
func ReadCount(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	st, err := algorithm.DecodeFixed(b)
	return st.Count, err
}
