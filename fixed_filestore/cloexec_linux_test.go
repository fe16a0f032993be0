package fixedfilestore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/lab/storetest"
)

// The chapter's claim: every descriptor a hit opens is close-on-exec, so
// that a child the program execs meanwhile inherits no lock to outlive
// it. Between its open and its lock, the hit's state file is found among
// this process's descriptors, and its FD_CLOEXEC flag read.
func TestTheStateFileIsCloseOnExec(t *testing.T) {
	s, err := fixedfilestore.New(t.TempDir(), fixedfilestore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	path := s.Path(rule, storetest.Key)
	found := 0
	fixedfilestore.SetOpenedHook(s, func() {
		links, _ := filepath.Glob("/proc/self/fd/*")
		for _, l := range links {
			if target, err := os.Readlink(l); err == nil && target == path {
				fd := 0
				_, err := fmt.Sscanf(filepath.Base(l), "%d", &fd)
				require.NoError(t, err)
				flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
				require.NoError(t, err)
				assert.NotZero(t, flags&unix.FD_CLOEXEC, "descriptor %d of %s", fd, path)
				found++
			}
		}
	})
	_, err = s.TakeAt(context.Background(), rule, storetest.Key, time.Now())
	require.NoError(t, err)
	assert.Equal(t, 1, found, "the hit's descriptor of its state file")
}
