package algorithm

import (
	"fmt"
	"time"

	"github.com/ratelab/ratelab"
)

// maxSkewSeconds is ratelab.MaxSkew in seconds: how far ahead of this
// host's clock a writer's may run. The bounds each ahead method checks are
// the package documentation's.
const maxSkewSeconds = int64(ratelab.MaxSkew / time.Second)

// ahead reports an error when s ends further ahead of now than any
// rule's window and MaxSkew.
func (s Fixed) ahead(now time.Time) error {
	if t := now.Unix(); s.ResetAt-t > maxWindowSeconds+maxSkewSeconds {
		return tooFar("reset_at", s.ResetAt*1000, t*1000, (maxWindowSeconds+maxSkewSeconds)*1000)
	}
	return nil
}

// ahead reports an error when s's window starts more than MaxSkew after
// now.
func (s Sliding) ahead(now time.Time) error {
	if t := now.Unix(); s.WindowStart-t > maxSkewSeconds {
		return tooFar("window_start", s.WindowStart*1000, t*1000, maxSkewSeconds*1000)
	}
	return nil
}

// ahead reports an error when s's latest instant is more than MaxSkew after
// now. The instants are in order (DecodeLog), so the last is the latest.
func (s Log) ahead(now time.Time) error {
	if n, nowMs := len(s.TS), now.UnixMilli(); n > 0 && s.TS[n-1]-nowMs > maxSkewSeconds*1000 {
		return tooFar("instant", s.TS[n-1], nowMs, maxSkewSeconds*1000)
	}
	return nil
}

// ahead reports an error when s's tat is more than three of its windows
// and MaxSkew after now.
func (s GCRAState) ahead(now time.Time) error {
	if limit, nowMs := (3*s.Window+maxSkewSeconds)*1000, now.UnixMilli(); s.TAT-nowMs > limit {
		return tooFar("tat", s.TAT, nowMs, limit)
	}
	return nil
}

// tooFar is the error of a state's field at (Unix ms) further ahead of the
// hit at nowMs than the bound (ms) any rule writes.
func tooFar(field string, at, nowMs, bound int64) error {
	return fmt.Errorf("algorithm: state %s %d is %v ahead of the hit, more than the %v any rule writes",
		field, at, Millis(at-nowMs), Millis(bound))
}
