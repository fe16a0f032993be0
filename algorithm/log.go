package algorithm

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ratelab/ratelab"
)

// Log is a sliding log: its window length (seconds) and the instants of
// the hits it allowed within the last window, in Unix milliseconds, oldest
// first. It never holds more than the rule's limit. The zero value is the
// absent state.
type Log struct {
	Window int64
	TS     []int64
}

// !+log

// Take decides one hit of r at now. It forgets the instants older than the
// window-long span ending now, both ends included, and allows the hit
// while fewer than limit remain, recording its instant; a refused hit is
// not recorded (CountRefusals records it in place of the oldest). So no
// window-long span ever holds more than limit allowed hits, and the state
// never holds more than limit instants. changed reports whether the state
// must be written back.
//
// A hit stamped before the state's latest instant is taken at that
// instant: it can never bring an instant back into the span.
func (s Log) Take(r ratelab.Rule, now time.Time) (next Log, d ratelab.Decision, changed bool, err error) {
	w, nowMs := int64(r.Window/time.Second), now.UnixMilli()
	if s.Window != 0 && s.Window != w {
		return s, d, false, WindowConflict(r, s.Window)
	}
	at := nowMs
	if n := len(s.TS); n > 0 {
		at = max(at, s.TS[n-1])
	}
	from := at - w*1000
	i := 0
	for i < len(s.TS) && s.TS[i] < from {
		i++
	}
	ts := s.TS[i:]
	if over := int64(len(ts)) - r.Limit; over > 0 { // the limit was lowered
		ts = ts[over:]
	}
	if int64(len(ts)) >= r.Limit {
		if r.Refusals == ratelab.CountRefusals {
			// The refused hit is recorded too, in place of the oldest: the
			// log holds the latest limit instants, so hammering keeps the
			// span full.
			ts = append(ts[int64(len(ts))-r.Limit+1:], at)
			d.RetryAfter = since(ts[0]+w*1000+1, nowMs)
			d.ResetAfter = since(at+w*1000+1, nowMs)
			return Log{Window: w, TS: ts}, d, true, nil
		}
		// One more fits once the oldest of the last limit instants leaves.
		d.RetryAfter = since(ts[int64(len(ts))-r.Limit]+w*1000+1, nowMs)
		d.ResetAfter = since(ts[len(ts)-1]+w*1000+1, nowMs)
		return s, d, false, nil
	}
	ts = append(ts, at) // ts is this call's own: Decode made it
	d = ratelab.Decision{
		Allowed:    true,
		Remaining:  r.Limit - int64(len(ts)),
		ResetAfter: since(at+w*1000+1, nowMs),
	}
	return Log{Window: w, TS: ts}, d, true, nil
}

// !-log

// Append appends the state's encoding to dst.
func (s Log) Append(dst []byte) []byte {
	dst = append(dst, `{"window":`...)
	dst = strconv.AppendInt(dst, s.Window, 10)
	dst = append(dst, `,"ts":[`...)
	for i, t := range s.TS {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, t, 10)
	}
	return append(dst, "]}"...)
}

// DecodeLog parses a sliding-log state: a window a rule may have, and at
// most MaxLogLimit instants in ascending order between the epoch and the
// year 3000.
func DecodeLog(b []byte) (Log, error) {
	if len(b) == 0 {
		return Log{}, nil
	}
	s, ok := scanLog(b)
	if !ok {
		var raw struct {
			Window *int64  `json:"window"`
			TS     []int64 `json:"ts"`
		}
		if err := decodeObject(b, &raw); err != nil {
			return Log{}, err
		}
		if raw.Window == nil || raw.TS == nil {
			return Log{}, errors.New(`algorithm: state lacks "window" or "ts"`)
		}
		s = Log{Window: *raw.Window, TS: raw.TS}
	}
	if err := checkWindow(s.Window); err != nil {
		return Log{}, err
	}
	if len(s.TS) > ratelab.MaxLogLimit {
		return Log{}, fmt.Errorf("algorithm: state holds %d instants, more than %d", len(s.TS), ratelab.MaxLogLimit)
	}
	for i, t := range s.TS {
		if t < 0 || t >= maxUnix*1000 || i > 0 && t < s.TS[i-1] {
			return Log{}, fmt.Errorf("algorithm: state instant %d is out of order or out of range", t)
		}
	}
	return s, nil
}

// scanLog reads exactly what Append writes, possibly padded (see
// isSpace), without reflection.
func scanLog(b []byte) (Log, bool) {
	rest, ok := bytes.CutPrefix(b, []byte(`{"window":`))
	if !ok {
		return Log{}, false
	}
	w, n, ok := scanInt(rest)
	if !ok {
		return Log{}, false
	}
	rest, ok = bytes.CutPrefix(rest[n:], []byte(`,"ts":[`))
	if !ok {
		return Log{}, false
	}
	s := Log{Window: w, TS: make([]int64, 0, bytes.Count(rest, []byte{','})+2)} // room for one more
	for len(rest) > 0 && rest[0] != ']' {
		if len(s.TS) > 0 {
			if rest[0] != ',' {
				return Log{}, false
			}
			rest = rest[1:]
		}
		t, n, ok := scanInt(rest)
		if !ok {
			return Log{}, false
		}
		s.TS, rest = append(s.TS, t), rest[n:]
	}
	if rest, ok = bytes.CutPrefix(rest, []byte("]}")); !ok || !isSpace(rest) {
		return Log{}, false
	}
	return s, true
}
