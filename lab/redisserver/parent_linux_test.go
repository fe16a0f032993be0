package redisserver

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/poll"
)

// envParent makes TestServerDiesWithItsParent's child: it starts a server,
// prints its pid and waits to be killed.
const envParent = "RATELAB_REDISSERVER_PARENT"

// The attacker's finding: a ratelab killed with SIGKILL left its private
// redis-server running, listening, for good. A server now dies with the
// process that started it.
func TestServerDiesWithItsParent(t *testing.T) {
	if os.Getenv(envParent) == "1" {
		s, err := Start()
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Printf("pid %d\n", s.cmd.Process.Pid)
		select {}
	}
	if !Available() {
		t.Skip("redis-server not found: install it with " + InstallHint)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestServerDiesWithItsParent$")
	cmd.Env = append(os.Environ(), envParent+"=1", "TMPDIR="+t.TempDir()) // the server's directory, which nobody is left to remove
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	var pid int
	if _, serr := fmt.Sscanf(line, "pid %d", &pid); err != nil || serr != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q (%v): want its server's pid", line, err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	cmd.Process.Kill()
	cmd.Wait()
	err = poll.Until(5*time.Second, 10*time.Millisecond, func() error {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(stat), ") Z ") { // gone, or dead and not yet reaped
			return nil
		}
		return fmt.Errorf("redis-server %d still runs after its parent was killed", pid)
	})
	if err != nil {
		t.Error(err)
	}
}
