//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/lab/storetest"
)

// A writable state directory passes, and the probe leaves nothing behind.
func TestCheckWritable(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{})
	hit(t, s, t0)
	for range 3 {
		require.NoError(t, s.CheckWritable())
	}
	entries, err := os.ReadDir(s.Dir())
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the state file is left")
	assert.Equal(t, filepath.Base(s.Path(rule, storetest.Key)), entries[0].Name())
}

// writableChild says what CheckWritable reports of a store on T_BASE,
// once T_SETUP made it unwritable: "fsize" sets the file size limit to 0,
// so the probe is created but cannot be written; "rofs" mounts a
// read-only filesystem on T_BASE, in the child's own mount namespace.
func writableChild() error {
	base := os.Getenv("T_BASE")
	switch os.Getenv("T_SETUP") {
	case "fsize":
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unix.Rlimit{}); err != nil {
			return err
		}
	case "rofs":
		if err := mountReadOnly(base); err != nil {
			childproc.Say("skip mount a read-only filesystem: %v", err)
			return nil
		}
	}
	s, err := fixedfilestore.New(base, fixedfilestore.Options{})
	if err != nil {
		return err
	}
	err = s.CheckWritable()
	var errno syscall.Errno
	errors.As(err, &errno)
	childproc.Say("result %d %v", errno, err)
	return nil
}

// An unwritable state directory is reported, naming the directory and
// the cause, and the probe never leaves a file behind, even when it was
// created and could not be written.
func TestCheckWritableFailures(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) writableRun
		want  syscall.Errno
	}{
		{"nobody over a root-owned 0755 directory", asNobody, syscall.EACCES},
		{"file size limit 0", func(t *testing.T) writableRun {
			return writableRun{base: t.TempDir(), env: []string{"T_SETUP=fsize"}}
		}, syscall.EFBIG},
		{"read-only filesystem", func(t *testing.T) writableRun {
			return writableRun{base: t.TempDir(), attr: unshareMounts(), env: []string{"T_SETUP=rofs"}, needs: "a mount namespace"}
		}, syscall.EROFS},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := tt.setup(t)
			errno, got := run.check(t)
			t.Logf("CheckWritable: %s", got)
			assert.Equal(t, tt.want, errno, "the cause it wraps")
			assert.Contains(t, got, tt.want.Error())
			assert.Contains(t, got, filepath.Join(run.base, fixedfilestore.DirName), "the error names the directory")
			entries, _ := os.ReadDir(filepath.Join(run.base, fixedfilestore.DirName))
			assert.Empty(t, entries, "the probe left a file behind")
		})
	}
}

// A writableRun is a child of role writable/check: the binary (this one
// if empty), run with attr and env, the base directory of its store, and
// what attr needs of the system, if it may not start for want of it.
type writableRun struct {
	exe, base string
	attr      *syscall.SysProcAttr
	env       []string
	needs     string
}

// check runs the child and returns what it says CheckWritable reported,
// the cause it wraps and the message, skipping the test if the child
// could not set itself up.
func (run writableRun) check(t *testing.T) (syscall.Errno, string) {
	t.Helper()
	exe := run.exe
	if exe == "" {
		var err error
		exe, err = os.Executable()
		require.NoError(t, err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(append(os.Environ(), childproc.Env("writable/check")...), append(run.env, "T_BASE="+run.base)...)
	cmd.Dir, cmd.SysProcAttr = run.base, run.attr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("child: %v; stderr: %s", err, exit.Stderr)
	}
	if err != nil && run.needs != "" {
		t.Skipf("cannot give the child %s: %v", run.needs, err)
	}
	require.NoError(t, err)
	line := strings.TrimSpace(string(out))
	if reason, ok := strings.CutPrefix(line, "skip "); ok {
		t.Skip(reason)
	}
	var errno syscall.Errno
	_, err = fmt.Sscanf(line, "result %d", &errno)
	require.NoError(t, err, "child printed %q", line)
	_, got, _ := strings.Cut(strings.TrimPrefix(line, "result "), " ")
	return errno, got
}

// asNobody sets up a run as the user nobody over a state directory owned
// by root and mode 0755, with a copy of the test binary nobody can run:
// root ignores permission bits, so only another user sees them refuse.
func asNobody(t *testing.T) writableRun {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run a child as nobody")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	dir, err := os.MkdirTemp("", "ratelab-writable-") // t.TempDir's parents are 0700
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	base := filepath.Join(dir, "base")
	for _, d := range []string{dir, base, filepath.Join(base, fixedfilestore.DirName)} {
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.Chmod(d, 0o755))
	}
	exe := filepath.Join(dir, "test.bin")
	require.NoError(t, copyFile(exe, 0o755))
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return writableRun{exe: exe, base: base, attr: &syscall.SysProcAttr{Credential: cred}, needs: "a binary nobody can run under " + dir}
}

// copyFile copies this test binary to path with mode perm.
func copyFile(path string, perm os.FileMode) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := os.Open(self)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	return errors.Join(err, dst.Close())
}
