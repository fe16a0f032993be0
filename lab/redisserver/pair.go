package redisserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ratelab/ratelab/internal/poll"
)

// Pair is a private primary and its replica: two redis-servers, the
// replica following the primary, for demonstrating what a failover does.
type Pair struct {
	Primary, Replica *Server
}

// StartPair starts a primary (with primaryArgs) and a replica of it, and
// waits until the replica is in sync.
func StartPair(primaryArgs ...string) (*Pair, error) {
	// A full sync starts at once, not after the 5 s diskless-sync delay.
	p, err := Start(append([]string{"--repl-diskless-sync-delay", "0"}, primaryArgs...)...)
	if err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(p.Addr, ":")
	r, err := Start("--replicaof", host, port)
	if err != nil {
		p.Stop()
		return nil, err
	}
	pair := &Pair{Primary: p, Replica: r}
	if err := pair.waitReplicaUp(10 * time.Second); err != nil {
		pair.Stop()
		return nil, err
	}
	return pair, nil
}

func (p *Pair) waitReplicaUp(limit time.Duration) error {
	return waitReplication(p.Replica, "master_link_status:up", "the replica did not catch up", limit)
}

// waitReplication polls s's INFO replication until it contains want.
func waitReplication(s *Server, want, failure string, limit time.Duration) error {
	c := s.Client()
	defer c.Close()
	return poll.Until(limit, 10*time.Millisecond, func() error {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil && !strings.Contains(info, want) {
			err = errors.New("redisserver: " + failure)
		}
		return err
	})
}

// PrimaryURL and ReplicaURL are the servers' redis:// URLs.
func (p *Pair) PrimaryURL() string { return p.Primary.URL() }

// ReplicaURL is the replica's redis:// URL.
func (p *Pair) ReplicaURL() string { return p.Replica.URL() }

// PauseReplica cuts the replication link, as a partition or a replica
// far behind would: the replica is told to follow a primary that is not
// there (port 1 refuses), so it keeps the data it has and receives
// nothing more, while the primary goes on acknowledging writes. (Stopping
// the replica's process would not do: the kernel would still take the
// stream into its socket, and the replica would read it on waking.)
func (p *Pair) PauseReplica() error {
	c := p.Replica.Client()
	defer c.Close()
	return c.Do(context.Background(), "REPLICAOF", "127.0.0.1", "1").Err()
}

// ResumeReplica does nothing: the replica is promoted next, as it was.
func (p *Pair) ResumeReplica() error { return nil }

// KillPrimary kills the primary (SIGKILL), as a crashed host.
func (p *Pair) KillPrimary() error {
	if err := p.Primary.cmd.Process.Kill(); err != nil {
		return err
	}
	_ = p.Primary.cmd.Wait()
	return nil
}

// PromoteReplica makes the replica a primary (REPLICAOF NO ONE), as a
// failover does.
func (p *Pair) PromoteReplica(ctx context.Context) error {
	c := p.Replica.Client()
	defer c.Close()
	if err := c.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("redisserver: promote: %w", err)
	}
	return nil
}

// WaitReplicaLagging polls the primary until it counts no replica as good
// for min-replicas-to-write: the replica has been silent longer than
// min-replicas-max-lag.
func (p *Pair) WaitReplicaLagging(limit time.Duration) error {
	return waitReplication(p.Primary, "min_slaves_good_slaves:0", "the primary still counts the replica as good", limit)
}

// Stop stops both servers.
func (p *Pair) Stop() {
	p.Primary.Stop()
	p.Replica.Stop()
}
