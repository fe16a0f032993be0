//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/lab/storetest"
)

// A fixed window ending further ahead than any rule's window and MaxSkew
// was written by no rule: it is replaced by a fresh window with a warning,
// under either policy, where it used to be a conflict on every hit,
// forever. A window 3h ahead under this 1h rule may be another rule's (of
// up to MaxWindow): still a conflict, the file untouched.
func TestFixedWindowFurtherAheadThanAnyRuleIsReplaced(t *testing.T) {
	tests := []struct {
		name     string
		resetAt  time.Time
		conflict bool
	}{
		{"500 years ahead", t0.AddDate(500, 0, 0), false},
		{"just past MaxWindow and MaxSkew", t0.Add(ratelab.MaxWindow + ratelab.MaxSkew + time.Second), false},
		{"3h ahead: another rule's", t0.Add(3 * time.Hour), true},
		{"at MaxWindow and MaxSkew: another rule's", t0.Add(ratelab.MaxWindow + ratelab.MaxSkew), true},
	}
	for _, tt := range tests {
		for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed} {
			t.Run(tt.name+"/fail-"+policy.String(), func(t *testing.T) {
				s, logs := newGuarded(t, policy, fixedfilestore.Options{})
				path := s.Path(rule, storetest.Key)
				state := fmt.Sprintf(`{"count":12,"reset_at":%d}`, tt.resetAt.Unix())
				require.NoError(t, os.WriteFile(path, []byte(state), 0o600))
				d, err := s.TakeAt(context.Background(), rule, storetest.Key, t0)
				got, rerr := os.ReadFile(path)
				require.NoError(t, rerr)
				if tt.conflict {
					require.ErrorIs(t, err, ratelab.ErrRuleConflict)
					assert.Equal(t, state, string(got), "the other rule's state was touched")
					assert.NotContains(t, logs.String(), "corrupt")
					return
				}
				require.NoError(t, err)
				assert.Equal(t, int64(1), count(d), "a fresh window")
				assert.Equal(t, ratelab.Shared, d.Source)
				assert.Contains(t, logs.String(), "corrupt state replaced")
				assert.Contains(t, logs.String(), path)
				assert.Equal(t, fmt.Sprintf(`{"count":1,"reset_at":%d}`, t0.Add(time.Hour).Unix()), string(got), "replaced")
			})
		}
	}
}
