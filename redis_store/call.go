package redisstore

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// processor is what the store needs of a client to send a command it
// built itself: every go-redis client (plain, failover, cluster, ring)
// has it.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// reloader is a client that can be told its map of the cluster may be
// stale: a *redis.ClusterClient, whose ReloadState asks a node for the
// slots again, in the background, at most every 200 ms.
type reloader interface {
	ReloadState(ctx context.Context)
}

// onceCmd is a command go-redis must not send twice. A script whose reply
// was lost (a reset connection, a read timeout) may have run: sent again,
// it would count the hit twice. A cluster client retries such a failure
// on its own, whatever MaxRetries says, unless the command says NoRetry.
// Redirects are still followed — MOVED, ASK, READONLY mean the node did
// not run it.
type onceCmd struct{ *redis.Cmd }

// NoRetry reports that the command must not be sent again after a
// failure that may have come after it ran.
func (onceCmd) NoRetry() bool { return true }

// call runs script on keys once, as go-redis's Script.Run does — EVALSHA,
// and only if Redis answers that it does not know the script (NOSCRIPT:
// nothing ran) EVAL with its source — but neither command is ever sent
// again after a failure.
func (s *Store) call(ctx context.Context, script *redis.Script, keys []string, args ...any) ([]int64, error) {
	return script.Run(ctx, once{s.rdb, s.proc}, keys, args...).Int64Slice()
}

// reloadAfter makes a cluster client reload its map of the slots after a
// hit failed for a reason that is not Redis's answer — the network, a
// timeout — so that a primary that died is left for its promoted replica
// within a second or so of the promotion, not at go-redis's next periodic
// reload (every 60 s), nor ever for an error that go-redis does not take
// as a sign of a moved slot (a refused connection).
func (s *Store) reloadAfter(ctx context.Context, err error) {
	if err == nil || s.reload == nil {
		return // before rerr, which escapes: a hit allocates nothing here
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		s.reload.ReloadState(ctx)
	}
}

// once is the store's client as a redis.Scripter whose EVAL and EVALSHA
// are onceCmds: what Script.Run sends through it is never retried.
type once struct {
	redis.Scripter
	proc processor
}

// Eval runs the script src, never retried.
func (o once) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	return o.send(ctx, "eval", src, keys, args)
}

// EvalSha runs the script whose SHA-1 digest is sha, never retried.
func (o once) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return o.send(ctx, "evalsha", sha, keys, args)
}

func (o once) send(ctx context.Context, name, script string, keys []string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, name, script, len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmd := onceCmd{redis.NewCmd(ctx, append(cmdArgs, args...)...)}
	_ = o.proc.Process(ctx, cmd) // the error is cmd's
	return cmd.Cmd
}
