package algorithm

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ratelab/ratelab"
)

// GCRAState is the generic cell rate algorithm's state: its window length
// (seconds) and the theoretical arrival time of the next hit, in Unix
// milliseconds. The zero value is the absent state.
type GCRAState struct {
	Window int64
	TAT    int64
}

// !+gcra

// Take decides one hit of r at now. Hits are due one every interval,
// window/limit rounded up to a millisecond, and up to burst may come
// early: the hit is allowed unless it comes before tat + interval −
// burst × interval, where tat is the later of the state's and now. An
// allowed hit moves tat one interval on; a refused one changes nothing
// (CountRefusals moves it on too, at most one window past a full burst).
// changed reports whether the state must be written back.
//
// A hit stamped early only ever finds tat further ahead of it, so it is
// refused sooner, never let through by a stale clock.
func (s GCRAState) Take(r ratelab.Rule, now time.Time) (next GCRAState, d ratelab.Decision, changed bool, err error) {
	w, nowMs := int64(r.Window/time.Second), now.UnixMilli()
	if s.Window != 0 && s.Window != w {
		return s, d, false, WindowConflict(r, s.Window)
	}
	interval := ceilDiv(w*1000, r.Limit)
	tat := max(s.TAT, nowMs)
	newTAT := tat + interval
	allowAt := newTAT - r.Burst*interval
	if nowMs < allowAt {
		if r.Refusals == ratelab.CountRefusals {
			// The refused hit moves the arrival time on as an allowed one
			// would, at most one window past a full burst.
			tat = min(newTAT, nowMs+r.Burst*interval+w*1000)
			d.RetryAfter = since(tat+interval-r.Burst*interval, nowMs)
			d.ResetAfter = since(tat, nowMs)
			return GCRAState{Window: w, TAT: tat}, d, true, nil
		}
		d.RetryAfter = since(allowAt, nowMs)
		d.ResetAfter = since(tat, nowMs)
		return s, d, false, nil
	}
	d = ratelab.Decision{
		Allowed:    true,
		Remaining:  (nowMs - allowAt) / interval,
		ResetAfter: since(newTAT, nowMs),
	}
	return GCRAState{Window: w, TAT: newTAT}, d, true, nil
}

// !-gcra

// Append appends the state's encoding to dst.
func (s GCRAState) Append(dst []byte) []byte {
	dst = append(dst, `{"window":`...)
	dst = strconv.AppendInt(dst, s.Window, 10)
	dst = append(dst, `,"tat":`...)
	dst = strconv.AppendInt(dst, s.TAT, 10)
	return append(dst, '}')
}

// DecodeGCRA parses a GCRA state: a window a rule may have and a tat
// between the epoch and the year 3000.
func DecodeGCRA(b []byte) (GCRAState, error) {
	if len(b) == 0 {
		return GCRAState{}, nil
	}
	var s GCRAState
	if v, ok := scanFlat(b, `{"window":`, `,"tat":`); ok {
		s = GCRAState{Window: v[0], TAT: v[1]}
	} else {
		var raw struct {
			Window *int64 `json:"window"`
			TAT    *int64 `json:"tat"`
		}
		if err := decodeObject(b, &raw); err != nil {
			return GCRAState{}, err
		}
		if raw.Window == nil || raw.TAT == nil {
			return GCRAState{}, errors.New(`algorithm: state lacks "window" or "tat"`)
		}
		s = GCRAState{Window: *raw.Window, TAT: *raw.TAT}
	}
	if err := checkWindow(s.Window); err != nil {
		return GCRAState{}, err
	}
	if s.TAT < 0 || s.TAT >= maxStateUnix*1000 {
		return GCRAState{}, fmt.Errorf("algorithm: state tat %d is out of range", s.TAT)
	}
	return s, nil
}
