package redisstore

import (
	"context"
	"errors"
	"io"
	"net"

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

// script is one of the store's Lua scripts: go-redis's, which loads it
// and sends it in WAIT's pipeline, with the command names and the two
// ways of naming it boxed once, so that a hit boxes only its own keys
// and numbers.
type script struct {
	*redis.Script
	sha, src any
}

func newScript(src string) *script {
	s := redis.NewScript(src)
	return &script{s, s.Hash(), src}
}

// The names of the two commands call sends, boxed once.
var evalshaName, evalName any = "evalsha", "eval"

// call runs sc on keys once, as go-redis's Script.Run does — EVALSHA,
// and only if Redis answers that it does not know the script (NOSCRIPT:
// nothing ran) EVAL with its source — but neither command is ever sent
// again after a failure. It builds the command's arguments itself, in
// one slice: the hot path of every hit.
func (s *Store) call(ctx context.Context, sc *script, keys []string, args ...any) ([]int64, error) {
	argv := make([]any, 3+len(keys)+len(args))
	argv[0], argv[1], argv[2] = evalshaName, sc.sha, len(keys)
	for i, k := range keys {
		argv[3+i] = k
	}
	copy(argv[3+len(keys):], args)
	cmd := s.send(ctx, argv)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") { // nil first: HasErrorPrefix allocates
		argv[0], argv[1] = evalName, sc.src
		cmd = s.send(ctx, argv)
	}
	return cmd.Int64Slice()
}

// send sends argv as a command never retried (onceCmd).
func (s *Store) send(ctx context.Context, argv []any) *redis.Cmd {
	cmd := onceCmd{redis.NewCmd(ctx, argv...)}
	_ = s.proc.Process(ctx, cmd) // the error is cmd's
	return cmd.Cmd
}

// lostReply is the error of a hit whose script may have reached Redis and
// run before its answer was lost: the hit was counted, or not. It says so
// to ratelab.WithFailPolicy (MaybeCounted), which logs a fail-open pass of
// it as such, not as a hit not counted.
type lostReply struct{ error }

func (e lostReply) Unwrap() error    { return e.error }
func (lostReply) MaybeCounted() bool { return true }

// lost returns err as a lostReply if it may have come after the script
// was sent: the connection closed or failed while the reply was awaited
// (EOF, a read or write error, a read timeout). A failure to connect, or
// to get a connection, came before anything was sent.
func lost(err error) error {
	var op *net.OpError
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &op) && op.Op != "dial" {
		return lostReply{err}
	}
	return err
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
