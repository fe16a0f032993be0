package beyondonehost

import (
	"context"

	"github.com/ratelab/ratelab/linearizability"
)

// FailoverHistory runs the failover demonstration in mode with every hit
// recorded (package linearizability) in a directory it makes in tmp and
// removes, and returns the history. Replication as it is gives a history
// no order explains: the promoted replica tells a client 29 left after
// the old primary had refused it. With either mitigation the hits the
// primary could not confirm failed, so nobody was told about them, and
// the promoted replica's answers are the first of the window.
func FailoverHistory(ctx context.Context, mode FailoverMode, tmp string) (linearizability.History, error) {
	return linearizability.RecordHere(tmp, func(rec *linearizability.Recorder) error {
		_, _, err := failoverRun(ctx, mode, rec.Store)
		return err
	})
}
