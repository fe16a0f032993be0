package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	redisstore "github.com/ratelab/ratelab/redis_store"
)

// canned answers every command of a client with the reply its variant's
// script gives, and sends nothing: what is left of a hit is the client's
// own work — the limiter's and go-redis's, without the network or Redis.
type canned struct{ reply func() any }

// resetAt is the canned fixed window's end, an hour after the run starts:
// read once, so that a canned reply costs every variant the same.
var resetAt = time.Now().Unix() + 3600

// replies are each variant's script's reply to a hit that is allowed.
var replies = map[string]func() any{
	"evalsha-return-1": func() any { return int64(1) },
	"ratelab-fixed":    func() any { return []any{int64(5), resetAt} },
	"ratelab-gcra":     func() any { return []any{int64(0), int64(1), int64(10), int64(0), int64(1000)} },
	"redis_rate":       func() any { return []any{int64(1), int64(10), "-1", "0.001"} },
	"ulule":            func() any { return []any{int64(5), int64(3600000)} },
}

func (c canned) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c canned) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c canned) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		switch cmd := cmd.(type) {
		case interface{ SetVal(any) }: // EVALSHA, also wrapped as ratelab's onceCmd
			cmd.SetVal(c.reply())
		case *redis.StringCmd: // ulule's SCRIPT LOAD: a SHA-1
			cmd.SetVal("0000000000000000000000000000000000000000")
		}
		return nil
	}
}

// clientWork returns each variant's own work per hit in nanoseconds, on a
// client whose every reply is canned: the median of three runs of
// testing.Benchmark, the variants in turns.
func clientWork() ([]float64, error) {
	fns := make([]func(*testing.B), len(variants))
	for i, v := range variants {
		rdb, err := redisstore.NewClient("redis://127.0.0.1:1/0", time.Second) // never dialled
		if err != nil {
			return nil, err
		}
		defer rdb.Close()
		rdb.AddHook(canned{replies[v]})
		f, err := hitterOn(v, rdb)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v, err)
		}
		fns[i] = func(b *testing.B) {
			for b.Loop() {
				if err := f(context.Background(), "k"); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	ns, err := inTurns(3, len(fns), func(_, i int) (float64, error) {
		r := testing.Benchmark(fns[i])
		if r.N == 0 {
			return 0, fmt.Errorf("%s: a hit on a canned reply failed", variants[i])
		}
		return float64(r.NsPerOp()), nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(ns))
	for i := range ns {
		out[i] = median(ns[i])
	}
	return out, nil
}
