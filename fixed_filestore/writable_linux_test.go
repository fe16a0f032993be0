package fixedfilestore_test

import (
	"os"
	"path/filepath"
	"syscall"

	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
)

// unshareMounts makes a child run in a mount namespace of its own, where
// its mounts are private to it.
func unshareMounts() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
}

// mountReadOnly mounts on dir a small tmpfs holding an empty state
// directory, and makes it read-only.
func mountReadOnly(dir string) error {
	if err := syscall.Mount("ratelab-ro", dir, "tmpfs", 0, "size=64k,mode=0755"); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(dir, fixedfilestore.DirName), 0o700); err != nil {
		return err
	}
	return syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, "")
}
