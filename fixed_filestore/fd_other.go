//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package fixedfilestore

import (
	"errors"
	"fmt"
	"runtime"
)

// supported reports that this platform lacks flock(2) semantics; every
// function of the platform layer returns it.
func supported() error {
	return fmt.Errorf("fixedfilestore: needs flock(2) semantics (advisory whole-file locks owned by the open file, "+
		"released when the holder dies), available on Linux, macOS and the BSDs, not on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

const cwdFD = -1

func openDirAt(int, string) (int, error)         { return -1, supported() }
func mkdirAt(int, string, uint32) error          { return supported() }
func openAt(int, string, openMode) (int, error)  { return -1, supported() }
func flock(int, lockKind, bool) error            { return supported() }
func funlock(int) error                          { return supported() }
func fstat(int) (fileStat, error)                { return fileStat{}, supported() }
func lstatAt(int, string) (fileStat, error)      { return fileStat{}, supported() }
func pread(int, []byte, int64) (int, error)      { return 0, supported() }
func pwrite(int, []byte, int64) (int, error)     { return 0, supported() }
func ftruncate(int, int64) error                 { return supported() }
func fchmod(int, uint32) error                   { return supported() }
func closeFD(int) error                          { return supported() }
func unlinkAt(int, string) error                 { return supported() }
func readDirNames(int, string) ([]string, error) { return nil, supported() }
