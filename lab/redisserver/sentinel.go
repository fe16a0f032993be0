package redisserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab/internal/freeport"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/internal/procstop"
	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the name the private Sentinel monitors its primary
// under: a client asks for it with master_name=ratelab.
const SentinelMaster = "ratelab"

// Sentinel is a private Redis Sentinel watching a Pair's primary, quick to
// act: the primary is judged down after 200 ms of silence, and one
// sentinel is a quorum.
type Sentinel struct {
	Addr string
	cmd  *exec.Cmd
	dir  string
}

// StartSentinel starts a Sentinel (redis-server --sentinel, with its own
// configuration file in its own directory) monitoring p's primary, and
// waits until it has found the replica.
func StartSentinel(p *Pair) (*Sentinel, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoServer
	}
	host, port, _ := strings.Cut(p.Primary.Addr, ":")
	for attempt := 0; attempt < 5; attempt++ {
		dir, err := os.MkdirTemp("", "redisserver-sentinel-")
		if err != nil {
			return nil, err
		}
		own, err := freeport.Get()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		// Sentinel rewrites its configuration file as it learns: it must
		// be a file of its own, in its own directory.
		conf := fmt.Sprintf("bind 127.0.0.1\nport %d\ndir %s\nsentinel monitor %s %s %s 1\n"+
			"sentinel down-after-milliseconds %[3]s 200\nsentinel failover-timeout %[3]s 2000\n",
			own, dir, SentinelMaster, host, port)
		name := filepath.Join(dir, "sentinel.conf")
		if err := os.WriteFile(name, []byte(conf), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		cmd := exec.Command(path, name, "--sentinel")
		procstop.DieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("redisserver: start sentinel: %w", err)
		}
		s := &Sentinel{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(own)), cmd: cmd, dir: dir}
		if err := s.waitReplicaKnown(10 * time.Second); err == nil {
			return s, nil
		}
		s.Stop() // the port was taken in between, or it never found the replica
	}
	return nil, errors.New("redisserver: the sentinel did not become ready")
}

// waitReplicaKnown polls until the sentinel lists a replica of its master
// that it does not consider down.
func (s *Sentinel) waitReplicaKnown(limit time.Duration) error {
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	return poll.Until(limit, 20*time.Millisecond, func() error {
		replicas, err := c.Replicas(context.Background(), SentinelMaster).Result()
		if err == nil && (len(replicas) == 0 || strings.Contains(replicas[0]["flags"], "down")) {
			err = errors.New("redisserver: the sentinel found no replica")
		}
		return err
	})
}

// URL is the redis:// URL a client uses to reach the current primary
// through the sentinel (go-redis's ParseFailoverURL form).
func (s *Sentinel) URL() string { return "redis://" + s.Addr + "/0?master_name=" + SentinelMaster }

// Stop kills the sentinel, waits for it and removes its directory.
func (s *Sentinel) Stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
	os.RemoveAll(s.dir)
}
