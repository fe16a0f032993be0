//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// This file is the store's whole platform layer: one system call per
// function, EINTR retried, nothing else. Everything above it is portable.

func supported() error { return nil }

// !+openflags

// flags are m's open(2) flags.
func (m openMode) flags() int {
	switch m {
	case openState:
		return unix.O_RDWR | unix.O_CREAT
	case openLocked:
		return unix.O_RDWR | unix.O_NONBLOCK
	case openRead:
		return unix.O_RDONLY | unix.O_NONBLOCK
	}
	return unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL // openNew
}

// !-openflags

// cwdFD stands for the working directory where a directory descriptor is
// asked for.
const cwdFD = unix.AT_FDCWD

// openDirAt opens name relative to dirfd as a directory, never through a
// symlink.
func openDirAt(dirfd int, name string) (int, error) {
	return openNoFollow(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
}

// mkdirAt is mkdirat(2): name relative to dirfd, mode perm; a symlink at
// name is an error (EEXIST), never followed.
func mkdirAt(dirfd int, name string, perm uint32) error {
	for {
		if err := unix.Mkdirat(dirfd, name, perm); err != unix.EINTR {
			return err
		}
	}
}

// openAt opens name relative to dirfd in mode, created 0600, never
// through a symlink.
func openAt(dirfd int, name string, mode openMode) (int, error) {
	return openNoFollow(dirfd, name, mode.flags(), 0o600)
}

// openNoFollow is openat(2) with O_NOFOLLOW and O_CLOEXEC; a symlink is
// errSymlink, a file where a directory was asked for errNotDir.
func openNoFollow(dirfd int, name string, flags int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
		switch {
		case err == nil:
			return fd, nil
		case err == unix.EINTR:
			continue
		case err == unix.ELOOP:
			return -1, errSymlink
		case err == unix.ENOTDIR:
			return -1, errNotDir
		}
		return -1, err
	}
}

// !+flock

// flock is flock(2) of kind on fd; without wait, a lock held elsewhere is
// errWouldBlock.
func flock(fd int, kind lockKind, wait bool) error {
	how := unix.LOCK_EX
	if kind == lockShared {
		how = unix.LOCK_SH
	}
	if !wait {
		how |= unix.LOCK_NB
	}
	for {
		switch err := unix.Flock(fd, how); err {
		case unix.EINTR:
			continue
		case unix.EWOULDBLOCK:
			return errWouldBlock
		default:
			return err
		}
	}
}

// funlock releases fd's flock(2).
func funlock(fd int) error { return unix.Flock(fd, unix.LOCK_UN) }

// !-flock

// fstat stats the open file fd.
func fstat(fd int) (fileStat, error) {
	var st unix.Stat_t
	err := unix.Fstat(fd, &st)
	return statOf(&st), err
}

// lstatAt stats name relative to dirfd, not following a link.
func lstatAt(dirfd int, name string) (fileStat, error) {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	return statOf(&st), err
}

func statOf(st *unix.Stat_t) fileStat {
	return fileStat{regular: st.Mode&unix.S_IFMT == unix.S_IFREG, symlink: st.Mode&unix.S_IFMT == unix.S_IFLNK, nlink: uint64(st.Nlink), mtime: time.Unix(st.Mtim.Unix()), perm: uint32(st.Mode) & 0o777,
		uid: st.Uid}
}

// fchmod sets the permission bits of fd.
func fchmod(fd int, mode uint32) error { return unix.Fchmod(fd, mode) }

// pread is pread(2): up to len(buf) bytes at off.
func pread(fd int, buf []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(fd, buf, off)
		if err != unix.EINTR {
			return max(n, 0), err
		}
	}
}

// pwrite is pwrite(2): up to len(buf) bytes at off.
func pwrite(fd int, buf []byte, off int64) (int, error) {
	for {
		n, err := unix.Pwrite(fd, buf, off)
		if err != unix.EINTR {
			return max(n, 0), err
		}
	}
}

// ftruncate is ftruncate(2).
func ftruncate(fd int, size int64) error { return unix.Ftruncate(fd, size) }

// closeFD is close(2).
func closeFD(fd int) error { return unix.Close(fd) }

// unlinkAt removes name relative to dirfd.
func unlinkAt(dirfd int, name string) error { return unix.Unlinkat(dirfd, name, 0) }

// readDirNames lists the directory dirfd, from its start, through a
// duplicate of the descriptor that it closes — close-on-exec, as every
// descriptor the store opens.
func readDirNames(dirfd int, dir string) ([]string, error) {
	fd, err := unix.FcntlInt(uintptr(dirfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	if _, err := f.Seek(0, 0); err != nil {
		return nil, err
	}
	return f.Readdirnames(-1)
}
