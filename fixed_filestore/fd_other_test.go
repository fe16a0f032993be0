//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package fixedfilestore

import (
	"errors"
	"testing"
)

// Every function of the platform layer says, where flock(2) semantics are
// missing, that it is unsupported, in an error errors.Is matches.
func TestPlatformLayerIsUnsupported(t *testing.T) {
	for name, call := range map[string]func() error{
		"openDirAt":    func() error { _, err := openDirAt(cwdFD, "d"); return err },
		"mkdirAt":      func() error { return mkdirAt(cwdFD, "d", 0o700) },
		"openAt":       func() error { _, err := openAt(0, "f", openState); return err },
		"flock":        func() error { return flock(0, lockExclusive, false) },
		"funlock":      func() error { return funlock(0) },
		"fstat":        func() error { _, err := fstat(0); return err },
		"lstatAt":      func() error { _, err := lstatAt(0, "f"); return err },
		"pread":        func() error { _, err := pread(0, nil, 0); return err },
		"pwrite":       func() error { _, err := pwrite(0, nil, 0); return err },
		"ftruncate":    func() error { return ftruncate(0, 0) },
		"closeFD":      func() error { return closeFD(0) },
		"unlinkAt":     func() error { return unlinkAt(0, "f") },
		"readDirNames": func() error { _, err := readDirNames(0, "d"); return err },
	} {
		if err := call(); !errors.Is(err, errors.ErrUnsupported) {
			t.Errorf("%s: got %v, want an error matching errors.ErrUnsupported", name, err)
		}
	}
}
