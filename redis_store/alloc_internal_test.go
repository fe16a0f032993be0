//go:build !race

package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab"
)

// A hit builds its Redis key in one allocation, the key itself: the state
// key is hashed from the stack and the digest hex-encoded in place. (The
// race detector allocates more, hence the build line.)
func TestKeyAllocatesOnce(t *testing.T) {
	s := &Store{prefix: "ratelab:"}
	r := ratelab.Rule{Name: "demo", Limit: 30, Window: time.Hour, Algorithm: ratelab.FixedWindow}
	if got := testing.AllocsPerRun(100, func() { _ = s.key(r, "ip:203.0.113.7") }); got != 1 {
		t.Errorf("key: %v allocations, want 1", got)
	}
}

// canned answers every script of a client with reply and sends nothing,
// allocating nothing itself: what a hit allocates is the store's and
// go-redis's.
type canned struct{ reply any }

func (canned) DialHook(next redis.DialHook) redis.DialHook { return next }

func (canned) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c canned) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(_ context.Context, cmd redis.Cmder) error {
		cmd.(interface{ SetVal(any) }).SetVal(c.reply)
		return nil
	}
}

// A fixed-window hit allocates what it cannot share — its key, its
// command's arguments and the command, its two numbers boxed, its
// deadline, the reply read — and nothing more: the script's names are
// boxed once, its keys and arguments stay on the stack, a clock read once
// is its instant and its deadline's start.
func TestHitAllocations(t *testing.T) {
	rdb, err := NewClient("redis://127.0.0.1:1/0", time.Second) // never dialled
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	rdb.AddHook(canned{[]any{int64(5), time.Now().Unix() + 3600}})
	s, err := New(rdb, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := ratelab.Rule{Name: "bench", Limit: ratelab.MaxLimit, Window: time.Hour}.Normalized()
	got := testing.AllocsPerRun(100, func() {
		if _, err := s.Take(context.Background(), r, "k"); err != nil {
			t.Fatal(err)
		}
	})
	if got > 10 {
		t.Errorf("a hit: %v allocations, want at most 10", got)
	}
}
