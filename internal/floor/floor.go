//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

// Package floor holds the two reference points the file store's cost is
// measured against: the bare system calls of a flock-serialised counter,
// and a faithful port of the PHP original's write. Both are complete hits
// on a state file, without parsing or checks.
package floor

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// OpenDir opens the directory the floor's files are named in. Like the
// store, which holds its state directory open, each hit then opens its
// file by name relative to the directory, walking one name, not a path.
// The caller closes the descriptor.
func OpenDir(dir string) (int, error) {
	return unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// SyscallFloor is the least any flock-serialised file counter can do:
// open (by name, in the directory dirfd), flock, pread, pwrite, ftruncate,
// close.
func SyscallFloor(dirfd int, name string, state []byte) error {
	fd, err := openLockRead(dirfd, name)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	if _, err := syscall.Pwrite(fd, state, 0); err != nil {
		return err
	}
	return syscall.Ftruncate(fd, int64(len(state)))
}

// TruncateFirst is the original's write: after reading, ftruncate to zero,
// then write. On ext4 the close that follows a truncate to zero of a file
// that had data triggers auto_da_alloc, which allocates the new blocks and
// queues them for writeback at once, instead of leaving them to delayed
// allocation.
func TruncateFirst(dirfd int, name string, state []byte) error {
	fd, err := openLockRead(dirfd, name)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	defer syscall.Flock(fd, syscall.LOCK_UN)
	if err := syscall.Ftruncate(fd, 0); err != nil {
		return err
	}
	_, err = syscall.Pwrite(fd, state, 0)
	return err
}

// openLockRead opens name in dirfd, takes an exclusive flock(2) and reads
// the state: the part every counter shares. The caller closes fd.
func openLockRead(dirfd int, name string) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, err
	}
	var buf [64]byte
	if err = syscall.Flock(fd, syscall.LOCK_EX); err == nil {
		_, err = syscall.Pread(fd, buf[:], 0)
	}
	if err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}
