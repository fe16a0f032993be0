//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package bench

import (
	"context"
	"os"
	"time"

	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/lab/redisserver"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// perHitRedis measures the Redis store against the file store, in turns.
func perHitRedis(o Options, ph *PerHit) error {
	now := benchNow()
	srv, err := redisserver.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	client := srv.Client()
	defer client.Close()
	rs, err := redisstore.New(client, redisstore.Options{})
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(o.Dir, "redis-")
	if err != nil {
		return err
	}
	fs, err := fixedfilestore.New(dir, fixedfilestore.Options{})
	if err != nil {
		return err
	}
	ctx, r := context.Background(), Rules()[0]
	rounds, err := inTurns(o.Rounds, o.PerRound,
		func() error { _, err := rs.TakeAt(ctx, r, "k", now); return err },
		func() error { _, err := fs.TakeAt(ctx, r, "k", now); return err },
	)
	if err != nil {
		return err
	}
	ph.Redis = time.Duration(medianOf(rounds, func(r []float64) float64 { return r[0] }))
	ph.RedisStore = time.Duration(medianOf(rounds, func(r []float64) float64 { return r[1] }))
	ph.RedisOverStore = medianOf(rounds, func(r []float64) float64 { return r[0] / r[1] })
	return nil
}
