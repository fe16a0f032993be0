package descriptors_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/ratelab/ratelab/internal/descriptors"
)

func TestExhausted(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&os.PathError{Op: "open", Path: "f", Err: syscall.EMFILE}, true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.ENFILE)}, true},
		{fmt.Errorf("store: %w", syscall.EMFILE), true},
		{&os.PathError{Op: "open", Path: "f", Err: syscall.ENOENT}, false},
		{errors.New("too many open files"), false}, // words are not the error
		{nil, false},
	} {
		if got := descriptors.Exhausted(tt.err); got != tt.want {
			t.Errorf("Exhausted(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
