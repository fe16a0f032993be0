package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ratelab/ratelab"
)

// answers is a store that gives its errors in turn, then a decision.
type answers []error

func (a *answers) TakeAt(context.Context, ratelab.Rule, string, time.Time) (ratelab.Decision, error) {
	if len(*a) == 0 {
		return ratelab.Decision{Allowed: true, Remaining: 29}, nil
	}
	err := (*a)[0]
	*a = (*a)[1:]
	return ratelab.Decision{}, err
}

// TakeBusy asks again only while the store says it was too busy to take
// the hit (not counted), and at most five times.
func TestTakeBusyAsksAgainOnlyWhileBusy(t *testing.T) {
	busy := fmt.Errorf("postgresstore: %w: the server reached the hit after its deadline", ratelab.ErrBusy)
	down := fmt.Errorf("postgresstore: %w: connection refused", ratelab.ErrUnavailable)
	tests := []struct {
		name      string
		errs      []error
		wantTries int
		wantErr   error
	}{
		{"answered at once", nil, 1, nil},
		{"busy twice, then answered", []error{busy, busy}, 3, nil},
		{"busy five times", []error{busy, busy, busy, busy, busy, busy}, 5, busy},
		{"an outage is not asked again", []error{down, busy}, 1, down},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := answers(tt.errs)
			d, tries, err := takeBusy(&s, Original, Key, T0)
			if tries != tt.wantTries || !errors.Is(err, tt.wantErr) || err == nil && !d.Allowed {
				t.Errorf("got %d tries, %v, %+v; want %d tries, %v", tries, err, d, tt.wantTries, tt.wantErr)
			}
		})
	}
}
