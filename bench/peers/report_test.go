package main

import "testing"

// A target's line says met only when the median ratio of the same
// round's figures is within its bound, and shows their spread.
func TestJudge(t *testing.T) {
	res := results{
		procs: 8,
		perHit: [][]float64{
			evalsha:      {30, 30, 30},
			ratelabFixed: {33, 39, 36},
			ratelabGCRA:  {50, 40, 45},
			redisRate:    {50, 50, 50},
			ulule:        {30, 40, 36},
		},
		hps: [][]float64{ratelabFixed: {100, 90, 95}, ulule: {95, 100, 100}, evalsha: {1, 1, 1}, ratelabGCRA: {1, 1, 1}, redisRate: {1, 1, 1}},
	}
	for _, tt := range []struct {
		t    target
		want string
	}{
		{targets[0], "target: Redis fixed window per hit ≤ ulule's — met (1.00 ×, spread 0.97–1.10 over 3 rounds)"},
		{targets[1], "target: Redis fixed window per hit ≤ 1.2 × a trivial EVALSHA — met (1.20 ×, spread 1.10–1.30 over 3 rounds)"},
		{targets[2], "target: 8 processes on one key: ratelab-fixed hits/s ≥ ulule's — not met (0.95 ×, spread 0.90–1.05 over 3 runs)"},
		{targets[3], "target: GCRA per hit ≤ redis_rate's — met (0.90 ×, spread 0.80–1.00 over 3 rounds)"},
	} {
		if got := tt.t.judge(res); got != tt.want {
			t.Errorf("judge:\n got %s\nwant %s", got, tt.want)
		}
	}
}
