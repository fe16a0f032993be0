package fixedfilestore

import (
	"errors"
	"time"
)

// The platform layer — fd_unix.go, and fd_other.go where flock(2) is
// missing — speaks of these portable values; the rest of the package
// speaks only to it.

// openMode is how a file is opened; none follows a symlink.
type openMode int

const (
	openState  openMode = iota // a hit: read-write, created if absent, never truncated
	openLocked                 // sweep, reset: read-write, existing only, never blocking
	openRead                   // inspect: read-only, never blocking
	openNew                    // CheckWritable: write-only, created, and new
)

// creates reports whether m creates the file when it is absent.
func (m openMode) creates() bool { return m == openState || m == openNew }

// lockKind is a flock(2) lock: shared for readers, exclusive for writers.
type lockKind int

const (
	lockExclusive lockKind = iota
	lockShared
)

// fileStat is what the package asks of a stat.
type fileStat struct {
	regular bool // a regular file, not a FIFO, device, directory or link
	symlink bool
	nlink   uint64
	mtime   time.Time
	perm    uint32 // the permission bits
	uid     uint32 // the owner
}

var (
	errSymlink    = errors.New("is a symlink: refusing to follow it")
	errNotDir     = errors.New("not a directory")
	errWouldBlock = errors.New("locked by another open file")
)

// preadFull reads from offset off until buf is full or the file ends. A
// short read of a regular file is its end, so the common case is one
// system call, not a second one that returns 0.
func preadFull(fd int, buf []byte, off int64) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := pread(fd, buf[n:], off+int64(n))
		if err != nil {
			return n, err
		}
		n += m
		if m < len(buf[n-m:]) {
			return n, nil
		}
	}
	return n, nil
}
