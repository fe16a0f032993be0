package algorithm_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
)

// Every decoder never panics, and whatever it accepts its encoder writes
// back in a form it reads as the same state.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"count":1,"reset_at":1783558800}`, ``, `null`, `{`, `{"count":-1,"reset_at":5}`, ` {"reset_at":5,"count":2} `,
		`{"count":9223372036854775807,"reset_at":9223372036854775807}`, `{"count":1,"reset_at":5}{}`,
		`{"window":60,"window_start":1783555200,"count":3,"prev_count":30}`, `{"window":60,"window_start":7,"count":0,"prev_count":0}`,
		`{"window":60,"ts":[1783555200000,1783555201000]}`, `{"window":60,"ts":[2,1]}`, `{"window":60,"ts":[]}`,
		`{"window":3600,"tat":1783555200000}`, `{"window":0,"tat":1}`,
		`{"window":10,"ts":[1783555200000]}          `, `{"count":1,"reset_at":5}` + "\n\t\r ", `{"window":10,"ts":[1]}783555202000]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if st, err := algorithm.DecodeFixed(b); err == nil && len(b) > 0 {
			if st.Count < 0 || st.ResetAt <= 0 {
				t.Fatalf("DecodeFixed(%q) accepted %+v", b, st)
			}
			if again, err := algorithm.DecodeFixed(st.Append(nil)); err != nil || again != st {
				t.Fatalf("round trip of %+v: %+v, %v", st, again, err)
			}
		}
		if st, err := algorithm.DecodeSliding(b); err == nil && len(b) > 0 {
			if again, err := algorithm.DecodeSliding(st.Append(nil)); err != nil || again != st {
				t.Fatalf("round trip of %+v: %+v, %v", st, again, err)
			}
		}
		if st, err := algorithm.DecodeLog(b); err == nil && len(b) > 0 {
			again, err := algorithm.DecodeLog(st.Append(nil))
			if err != nil || again.Window != st.Window || len(again.TS) != len(st.TS) {
				t.Fatalf("round trip of %+v: %+v, %v", st, again, err)
			}
		}
		if st, err := algorithm.DecodeGCRA(b); err == nil && len(b) > 0 {
			if again, err := algorithm.DecodeGCRA(st.Append(nil)); err != nil || again != st {
				t.Fatalf("round trip of %+v: %+v, %v", st, again, err)
			}
		}
		for _, d := range decoders { // padding, as a killed write leaves it, changes nothing
			if want, err := d.decode(b); err == nil && len(b) > 0 {
				if got, err := d.decode(append(b[:len(b):len(b)], " \t\r\n"...)); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s: %q padded decodes to %s, %v; unpadded to %s", d.name, b, got, err, want)
				}
			}
		}
	})
}

// Take, on any state bytes, any valid rule and any valid instant, never
// panics, never overflows into a negative wait or allowance, and leaves a
// state that decodes.
func FuzzTake(f *testing.F) {
	f.Add([]byte(`{"count":1,"reset_at":1783558800}`), uint8(0), int64(30), int64(3600), int64(0), int64(1783555200000))
	f.Add([]byte(`{"window":1,"window_start":32503679999,"count":268435456,"prev_count":268435456}`), uint8(1), int64(ratelab.MaxLimit), int64(1), int64(0), int64(32503679999999))
	f.Add([]byte(`{"window":31622400,"ts":[0,1,32503679999999]}`), uint8(2), int64(1000), int64(31622400), int64(0), int64(0))
	f.Add([]byte(`{"window":31622400,"tat":32503679999999}`), uint8(3), int64(1), int64(31622400), int64(1), int64(0))
	f.Add([]byte{}, uint8(3), int64(ratelab.MaxLimit), int64(31622400), int64(ratelab.MaxLimit), int64(32503679999999))
	f.Fuzz(func(t *testing.T, old []byte, alg uint8, limit, window, burst, nowMs int64) {
		r := ratelab.Rule{Name: "f", Limit: limit, Window: time.Duration(window) * time.Second,
			Algorithm: ratelab.Algorithms()[int(alg)%4], Burst: burst, Refusals: ratelab.Refusals(int(alg) / 4 % 3)}
		now := time.UnixMilli(nowMs)
		if window > int64(ratelab.MaxWindow/time.Second) || r.Validate() != nil || ratelab.CheckInstant(now) != nil {
			return
		}
		res, err := algorithm.Take(nil, old, r.Normalized(), now)
		if err != nil {
			return // a conflict: the state is left alone
		}
		d := res.Decision
		if d.Remaining < 0 || d.Remaining > r.Limit || d.RetryAfter < 0 || d.ResetAfter < 0 {
			t.Fatalf("rule %v, state %q, now %d: decision %+v", r, old, nowMs, d)
		}
		if d.Allowed && d.RetryAfter != 0 || !d.Allowed && (d.Remaining != 0 || d.RetryAfter == 0) {
			t.Fatalf("rule %v, state %q, now %d: inconsistent decision %+v", r, old, nowMs, d)
		}
		if res.State != nil {
			again, err := algorithm.Take(nil, res.State, r.Normalized(), now)
			if err != nil || again.Replaced != nil {
				t.Fatalf("rule %v: the state Take wrote, %q, does not decode: %v %v", r, res.State, err, again.Replaced)
			}
		}
	})
}

// The fast paths for the canonical forms and the JSON decoder agree on
// every input the fast path sees (the fuzzer explores the rest).
func TestCanonicalFastPathsAgree(t *testing.T) {
	for _, in := range []string{`{"count":0,"reset_at":1}`, `{"count":17,"reset_at":1783558800}`, `{"count":+1,"reset_at":5}`,
		`{"count":01,"reset_at":5}`, `{"count":1,"reset_at":05}`, `{"count":1,"reset_at":5} `, `{"count":1,"reset_at":-5}`} {
		got, gotErr := algorithm.DecodeFixed([]byte(in))
		want, wantErr := algorithm.DecodeFixed(append([]byte(" "), in...)) // a leading space skips the fast path
		if (gotErr == nil) != (wantErr == nil) || got != want {
			t.Errorf("DecodeFixed(%s) = %+v, %v; the JSON decoder says %+v, %v", in, got, gotErr, want, wantErr)
		}
	}
	for _, in := range []string{`{"window":60,"ts":[1,2,3]}`, `{"window":60,"ts":[]}`, `{"window":60,"ts":[01]}`, `{"window":60,"ts":[1,]}`} {
		got, gotErr := algorithm.DecodeLog([]byte(in))
		want, wantErr := algorithm.DecodeLog(append([]byte(" "), in...))
		if (gotErr == nil) != (wantErr == nil) || !bytes.Equal(got.Append(nil), want.Append(nil)) {
			t.Errorf("DecodeLog(%s) = %+v, %v; the JSON decoder says %+v, %v", in, got, gotErr, want, wantErr)
		}
	}
}

// A fixed window ending absurdly far ahead is reported as a conflict whose
// message never overflows into a negative duration.
func TestFixedConflictFarAhead(t *testing.T) {
	r := ratelab.Rule{Name: "r", Limit: 1, Window: time.Hour}
	_, _, err := algorithm.Fixed{Count: 1, ResetAt: 32503680000 + 1000}.Take(r, time.Unix(1783555200, 0))
	if err == nil || strings.Contains(err.Error(), "-") {
		t.Fatalf("got %v, want a conflict with a non-negative wait", err)
	}
}
