package fixedfilestore

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The store reaches its files only through a descriptor of the state
// directory, opened once without following a link at any name of its
// path: every open, stat and
// unlink is relative to it (openat, fstatat, unlinkat) and never follows a
// link either. A state directory swapped for a symlink while the store
// runs therefore never sends a write outside it: the descriptor still
// names the directory the store opened, wherever it now is, and a
// directory that was removed is reopened only if it is a real directory
// again.

// pathOf joins the state directory and name, for messages: a hit never
// needs the whole path to reach its file.
func (s *Store) pathOf(name string) string { return s.dir + string(os.PathSeparator) + name }

// openStateDirIn opens the state directory under base — base reached
// without following a link at any of its names, then rate-limits in it,
// created 0700 if absent — through descriptors only, so that no name on
// the way can send the store elsewhere.
func openStateDirIn(base string) (int, error) {
	basefd, err := openDirectory(base)
	if err != nil {
		return -1, err
	}
	defer closeFD(basefd)
	state := filepath.Join(base, DirName)
	if err := mkdirAt(basefd, DirName, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return -1, fmt.Errorf("create state directory: %w", &fs.PathError{Op: "mkdir", Path: state, Err: err})
	}
	fd, err := openDirIn(basefd, DirName)
	if err != nil {
		return -1, dirError(state, err)
	}
	return fd, nil
}

// openDirectory opens path as a directory without following a symlink at
// any of its names, not only the last: each is opened relative to the one
// before (openat(2) with O_NOFOLLOW), from the root or the working
// directory. The error names the first that is a link, missing or not a
// directory.
func openDirectory(path string) (int, error) {
	names := strings.Split(path, string(os.PathSeparator))
	if filepath.IsAbs(path) {
		names[0] = string(os.PathSeparator)
	}
	fd, at := cwdFD, ""
	for _, name := range names {
		if name == "" {
			continue
		}
		at = filepath.Join(at, name)
		next, err := openDirIn(fd, name)
		if fd != cwdFD {
			closeFD(fd)
		}
		if err != nil {
			return -1, dirError(at, err)
		}
		fd = next
	}
	return fd, nil
}

// openDirIn opens name in the directory dirfd as a directory, never
// through a link; a link is errSymlink, which O_DIRECTORY reports as not
// a directory.
func openDirIn(dirfd int, name string) (int, error) {
	fd, err := openDirAt(dirfd, name)
	if errors.Is(err, errNotDir) {
		if st, serr := lstatAt(dirfd, name); serr == nil && st.symlink {
			err = errSymlink
		}
	}
	return fd, err
}

// dirError says why the directory at path could not be opened.
func dirError(path string, err error) error {
	switch {
	case errors.Is(err, errSymlink):
		return fmt.Errorf("%s %w; use the real directory", path, err)
	case errors.Is(err, errNotDir):
		return fmt.Errorf("%s is %w", path, err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist: create it, or point the store at one that does", path)
	}
	return &fs.PathError{Op: "open", Path: path, Err: err}
}

// openFile opens name in the state directory in mode, never following a
// link. If the state directory was removed (someone cleaned var/), a
// mode that creates recreates it — not its parents — and tries once more.
func (s *Store) openFile(name string, mode openMode) (int, error) {
	s.dirMu.RLock()
	dirfd := s.dirfd
	fd, err := openAt(dirfd, name, mode)
	s.dirMu.RUnlock()
	if errors.Is(err, fs.ErrNotExist) && mode.creates() {
		if err := s.reopenDir(dirfd); err != nil {
			return -1, err
		}
		s.dirMu.RLock()
		fd, err = openAt(s.dirfd, name, mode)
		s.dirMu.RUnlock()
	}
	switch {
	case err == nil:
		return fd, nil
	case errors.Is(err, errSymlink):
		return -1, fmt.Errorf("%s %w", s.pathOf(name), err)
	}
	return -1, &fs.PathError{Op: "open", Path: s.pathOf(name), Err: err}
}

// reopenDir replaces the directory descriptor old, whose directory is
// gone, by a fresh one, creating the directory 0700 — and judging the
// directory it finds as New does: someone else may have made it.
func (s *Store) reopenDir(old int) error {
	s.dirMu.Lock()
	defer s.dirMu.Unlock()
	if s.dirfd != old { // another hit did it first
		return nil
	}
	fd, err := openStateDirIn(filepath.Dir(s.dir))
	if err != nil {
		return err
	}
	if err := s.judgeDir(fd); err != nil {
		closeFD(fd)
		return err
	}
	closeFD(old)
	s.dirfd = fd
	return nil
}

// tighten makes the state directory or a state file, open at fd and
// statted as st, private to the store's user (want: 0700 for the
// directory, 0600 for a file) when its mode lets anyone else in, and
// logs the change. On a shared host another account that can write the
// directory could plant a state of its choosing; one that can read it
// learns which keys were hit, and when. Another account's directory or
// file is refused before (owned, checkHeld), or not writable here.
func (s *Store) tighten(fd int, st fileStat, want uint32, path string) error {
	if st.perm&0o077 == 0 || st.uid != s.euid {
		return nil
	}
	if err := fchmod(fd, want); err != nil {
		return &fs.PathError{Op: "chmod", Path: path, Err: err}
	}
	s.log.Warn("fixedfilestore: mode tightened: nobody else may read or write rate-limit state",
		"path", path, "was", fmt.Sprintf("%#o", st.perm), "now", fmt.Sprintf("%#o", want))
	return nil
}

// judgeDir refuses the state directory open at fd if it is another
// account's (owned), and makes it 0700 if it is looser (tighten).
func (s *Store) judgeDir(fd int) error {
	st, err := fstat(fd)
	if err == nil {
		err = s.owned(st, s.dir)
	}
	if err == nil {
		err = s.tighten(fd, st, 0o700, s.dir)
	}
	return err
}

// owned reports an error if the directory statted as st, at path, is
// another account's that this process could write, and so could others:
// root can write any, and anyone a directory open to its group or to all.
// (Another account's directory this process cannot write, CheckWritable
// reports.)
func (s *Store) owned(st fileStat, path string) error {
	if st.uid == s.euid || s.euid != 0 && st.perm&0o022 == 0 {
		return nil
	}
	return fmt.Errorf("%s belongs to uid %d, not to this process's (uid %d): another account could plant or change its state; chown it, or use a directory of your own", path, st.uid, s.euid)
}

// names lists the state directory through its descriptor.
func (s *Store) names() ([]string, error) {
	s.dirMu.RLock()
	defer s.dirMu.RUnlock()
	return readDirNames(s.dirfd, s.dir)
}

// lstatFile stats name in the state directory without following a link.
func (s *Store) lstatFile(name string) (fileStat, error) {
	s.dirMu.RLock()
	defer s.dirMu.RUnlock()
	return lstatAt(s.dirfd, name)
}

// unlinkFile removes name from the state directory.
func (s *Store) unlinkFile(name string) error {
	s.dirMu.RLock()
	defer s.dirMu.RUnlock()
	return unlinkAt(s.dirfd, name)
}

// closeDir releases the directory descriptor.
func (s *Store) closeDir() error {
	s.dirMu.Lock()
	defer s.dirMu.Unlock()
	if s.dirfd < 0 {
		return nil
	}
	err := closeFD(s.dirfd)
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
	fd, err := s.openFile(name, openNew)
	if err != nil {
		return fmt.Errorf("fixedfilestore: state directory %s is not writable: %w", s.dir, err)
	}
	path := s.pathOf(name)
	if _, werr := pwrite(fd, []byte{'\n'}, 0); werr != nil {
		err = &fs.PathError{Op: "write", Path: path, Err: werr}
	}
	if cerr := closeFD(fd); cerr != nil {
		err = errors.Join(err, &fs.PathError{Op: "close", Path: path, Err: cerr})
	}
	if uerr := s.unlinkFile(name); uerr != nil {
		err = errors.Join(err, &fs.PathError{Op: "unlink", Path: path, Err: uerr})
	}
	if err != nil {
		return fmt.Errorf("fixedfilestore: state directory %s is not writable: %w", s.dir, err)
	}
	return nil
}
