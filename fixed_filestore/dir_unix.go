//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The store reaches its files only through a descriptor of the state
// directory, opened once without following a link: every open, stat and
// unlink is relative to it (openat, fstatat, unlinkat) and never follows a
// link either. A state directory swapped for a symlink while the store
// runs therefore never sends a write outside it: the descriptor still
// names the directory the store opened, wherever it now is, and a
// directory that was removed is reopened only if it is a real directory
// again.

// openDir opens path as a directory, refusing a symlink.
func openDir(path string) (int, error) {
	fd, err := openat(unix.AT_FDCWD, path, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	switch {
	case err == nil:
		return fd, nil
	case errors.Is(err, unix.ELOOP):
		return -1, fmt.Errorf("%s is a symlink: refusing to follow it; use the real directory", path)
	case errors.Is(err, unix.ENOTDIR):
		return -1, fmt.Errorf("%s is not a directory", path)
	}
	return -1, &fs.PathError{Op: "open", Path: path, Err: err}
}

// openAt opens name in the state directory with flags, never following a
// link. If the state directory was removed (someone cleaned var/), a
// create recreates it — not its parents — and tries once more.
func (s *Store) openAt(name string, flags int, perm uint32) (int, error) {
	s.dirMu.RLock()
	dirfd := s.dirfd
	fd, err := openatNoFollow(dirfd, s.dir, name, flags, perm)
	s.dirMu.RUnlock()
	if errors.Is(err, fs.ErrNotExist) && flags&unix.O_CREAT != 0 {
		if err := s.reopenDir(dirfd); err != nil {
			return -1, err
		}
		s.dirMu.RLock()
		fd, err = openatNoFollow(s.dirfd, s.dir, name, flags, perm)
		s.dirMu.RUnlock()
	}
	return fd, err
}

// reopenDir replaces the directory descriptor old, whose directory is
// gone, by a fresh one, creating the directory 0700.
func (s *Store) reopenDir(old int) error {
	s.dirMu.Lock()
	defer s.dirMu.Unlock()
	if s.dirfd != old { // another hit did it first
		return nil
	}
	if err := os.Mkdir(s.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("recreate state directory: %w", err)
	}
	fd, err := openDir(s.dir)
	if err != nil {
		return err
	}
	unix.Close(old)
	s.dirfd = fd
	return nil
}

// openatNoFollow opens name relative to dirfd with flags (see openat), and
// says so plainly when name is a symlink. dir names the directory in
// errors.
func openatNoFollow(dirfd int, dir, name string, flags int, perm uint32) (int, error) {
	fd, err := openat(dirfd, name, flags, perm)
	if err == nil {
		return fd, nil
	}
	path := dir + string(os.PathSeparator) + name // only for the error
	switch {
	case errors.Is(err, unix.ELOOP):
		return -1, fmt.Errorf("%s is a symlink: refusing to follow it", path)
	}
	return -1, &fs.PathError{Op: "open", Path: path, Err: err}
}

// openat is openat(2) with O_NOFOLLOW and O_CLOEXEC added to flags,
// retried when a signal interrupts it.
func openat(dirfd int, name string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// names lists the state directory through its descriptor.
func (s *Store) names() ([]string, error) {
	s.dirMu.RLock()
	fd, err := unix.Dup(s.dirfd)
	s.dirMu.RUnlock()
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), s.dir)
	defer f.Close()
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	return f.Readdirnames(-1)
}

// lstatAt stats name in the state directory without following a link.
func (s *Store) lstatAt(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	s.dirMu.RLock()
	err := unix.Fstatat(s.dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	s.dirMu.RUnlock()
	return st, err
}

// unlinkAt removes name from the state directory.
func (s *Store) unlinkAt(name string) error {
	s.dirMu.RLock()
	err := unix.Unlinkat(s.dirfd, name, 0)
	s.dirMu.RUnlock()
	return err
}

// closeDir releases the directory descriptor.
func (s *Store) closeDir() error {
	s.dirMu.Lock()
	defer s.dirMu.Unlock()
	if s.dirfd < 0 {
		return nil
	}
	err := syscall.Close(s.dirfd)
	s.dirfd = -1
	return err
}

// CheckWritable reports an error unless the store can create, write and
// remove a file in its state directory, as the first hit of every key
// does. A server calls it at start, so that a state directory it cannot
// write is refused there, once and plainly, rather than failing every hit
// by the fail policy.
//
// It creates a file of a unique name that no state file has (O_CREAT,
// O_EXCL and O_NOFOLLOW, mode 0600) through the store's descriptor of
// the directory, writes a byte to it and removes it — even when the write
// failed, so it never leaves the file behind. The error names the
// directory and wraps the cause: fs.ErrPermission for a directory this
// user may not write, syscall.EROFS on a read-only filesystem.
func (s *Store) CheckWritable() error {
	name := ".writable-" + rand.Text()
	fd, err := s.openAt(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("fixedfilestore: state directory %s is not writable: %w", s.dir, err)
	}
	path := s.dir + string(os.PathSeparator) + name
	if _, werr := unix.Write(fd, []byte{'\n'}); werr != nil {
		err = &fs.PathError{Op: "write", Path: path, Err: werr}
	}
	if cerr := unix.Close(fd); cerr != nil {
		err = errors.Join(err, &fs.PathError{Op: "close", Path: path, Err: cerr})
	}
	if uerr := s.unlinkAt(name); uerr != nil {
		err = errors.Join(err, &fs.PathError{Op: "unlink", Path: path, Err: uerr})
	}
	if err != nil {
		return fmt.Errorf("fixedfilestore: state directory %s is not writable: %w", s.dir, err)
	}
	return nil
}
