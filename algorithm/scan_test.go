package algorithm_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ratelab/ratelab/algorithm"
)

// decoders decode a state of each algorithm and encode it again.
var decoders = []struct {
	name   string
	state  string
	decode func([]byte) ([]byte, error)
}{
	{"fixed", `{"count":12,"reset_at":1783558800}`, func(b []byte) ([]byte, error) {
		s, err := algorithm.DecodeFixed(b)
		return s.Append(nil), err
	}},
	{"sliding", `{"window":60,"window_start":1783555200,"count":3,"prev_count":30}`, func(b []byte) ([]byte, error) {
		s, err := algorithm.DecodeSliding(b)
		return s.Append(nil), err
	}},
	{"log", `{"window":10,"ts":[1783555200000,1783555201000]}`, func(b []byte) ([]byte, error) {
		s, err := algorithm.DecodeLog(b)
		return s.Append(nil), err
	}},
	{"gcra", `{"window":3600,"tat":1783555200000}`, func(b []byte) ([]byte, error) {
		s, err := algorithm.DecodeGCRA(b)
		return s.Append(nil), err
	}},
}

// A state padded with trailing JSON whitespace — what a hit killed between
// its write and its truncate leaves — decodes to the state itself, on the
// fast path: with no more allocations than the bare state, where the JSON
// decoder would make several.
func TestPaddedStateDecodesOnTheFastPath(t *testing.T) {
	for _, d := range decoders {
		for _, pad := range []string{" ", "          ", " \t\r\n", "\n"} {
			t.Run(fmt.Sprintf("%s+%q", d.name, pad), func(t *testing.T) {
				padded := []byte(d.state + pad)
				got, err := d.decode(padded)
				if err != nil || string(got) != d.state {
					t.Fatalf("decode(%q) = %s, %v; want %s", padded, got, err, d.state)
				}
				state := []byte(d.state)
				bare := testing.AllocsPerRun(20, func() { d.decode(state) })
				if allocs := testing.AllocsPerRun(20, func() { d.decode(padded) }); allocs != bare {
					t.Errorf("decode(%q) made %v allocations, the bare state %v: not the fast path", padded, allocs, bare)
				}
			})
		}
	}
}

// Anything but whitespace after the state is still refused, fast path or
// not: the torn tail of a longer state never decodes.
func TestTornTailIsRefused(t *testing.T) {
	for _, d := range decoders {
		for _, tail := range []string{"783555202000]}", "}", " }", " x", "\x00"} {
			b := []byte(d.state + tail)
			if got, err := d.decode(b); err == nil {
				t.Errorf("decode(%q) = %s, want an error", b, got)
			}
		}
	}
}

// Padding is only ever whitespace a JSON decoder skips too.
func TestPaddingIsJSONWhitespace(t *testing.T) {
	for _, d := range decoders {
		b := append([]byte(" "), d.state+" \t\r\n"...) // a leading space skips the fast path
		got, err := d.decode(b)
		if err != nil || !bytes.Equal(got, []byte(d.state)) {
			t.Errorf("the JSON decoder reads %q as %s, %v; want %s", b, got, err, d.state)
		}
	}
}
