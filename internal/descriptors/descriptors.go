// Package descriptors says whether an error is a process out of file
// descriptors: load a client can make by holding a server's connections
// open, which the stores refuse as busy rather than let through.
package descriptors

import (
	"errors"
	"syscall"
)

// Exhausted reports whether err is open(2)'s or socket(2)'s EMFILE (the
// process's table of open files is full) or ENFILE (the system's).
func Exhausted(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}
