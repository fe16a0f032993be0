package redisstore

import (
	"strings"
	"testing"

	"github.com/ratelab/ratelab"
)

// key builds, in place, the same name as its definition: the prefix, the
// algorithm and, in braces, ratelab.KeyDigest of the rule's state key,
// and for a fixed window the suffix of its reset_at — for state keys that
// fit the stack buffer and for longer ones.
func TestKeyIsTheDigestOfTheStateKey(t *testing.T) {
	s := &Store{prefix: "ratelab:"}
	for _, tt := range []struct {
		r   ratelab.Rule
		key string
	}{
		{ratelab.Rule{Name: "demo", Algorithm: ratelab.FixedWindow}, "ip:203.0.113.7"},
		{ratelab.Rule{Name: "login", Algorithm: ratelab.GCRA}, ""},
		{ratelab.Rule{Name: "a", Algorithm: ratelab.SlidingLog}, strings.Repeat("é", 200)},
		{ratelab.Rule{Name: strings.Repeat("n", 127), Algorithm: ratelab.SlidingCounter}, "k"},
	} {
		got := s.key(tt.r, tt.key)
		want := "ratelab:" + string(tt.r.Algorithm) + ":{" + ratelab.KeyDigest(tt.r.StateKey(tt.key)) + "}"
		if tt.r.Algorithm == ratelab.FixedWindow {
			want += ":reset_at"
		}
		if got != want {
			t.Errorf("key(%q, %q) = %q, want %q", tt.r.Name, tt.key, got, want)
		}
	}
}
