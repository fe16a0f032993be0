package algorithm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ratelab/ratelab"
)

// maxUnix ends the instants ratelab accepts (ratelab.MaxUnix).
const maxUnix = ratelab.MaxUnix

// maxStateUnix bounds the instants a state may record: a window that
// opens just before maxUnix ends up to two maximal windows later.
const maxStateUnix = maxUnix + 2*maxWindowSeconds

// maxDecode bounds what the JSON fallback decoder reads.
const maxDecode = maxLogSize

// scanFlat reads exactly the canonical encoding made of the given
// literal prefixes, each followed by a non-negative integer written
// without sign or leading zeros, and a closing brace — what Append writes,
// possibly padded (see isSpace) — without reflection: every hit reads its
// state, so this is the hot path. Anything else reports false and is left
// to decodeObject.
func scanFlat(b []byte, prefixes ...string) (out [4]int64, ok bool) {
	for i, p := range prefixes {
		rest, ok := bytes.CutPrefix(b, []byte(p))
		if !ok {
			return out, false
		}
		n, m, ok := scanInt(rest)
		if !ok {
			return out, false
		}
		out[i], b = n, rest[m:]
	}
	return out, len(b) > 0 && b[0] == '}' && isSpace(b[1:])
}

// isSpace reports whether b is only JSON whitespace. A store that writes a
// shorter state over a longer one in place may pad it with spaces to the
// old length, so that the file parses at every instant, even if the writer
// dies before it truncates; every decoder reads the padding as the end of
// the state, on its fast path too.
func isSpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// scanInt reads a canonical non-negative integer of at most 18 digits at
// the start of b and returns it and its length.
func scanInt(b []byte) (int64, int, bool) {
	var n int64
	i := 0
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	if i == 0 || i > 18 || b[0] == '0' && i > 1 {
		return 0, 0, false
	}
	return n, i, true
}

// decodeObject decodes exactly one JSON object of at most maxDecode bytes
// into v, saying what is wrong otherwise.
func decodeObject(b []byte, v any) error {
	if len(b) > maxDecode {
		return fmt.Errorf("algorithm: state is larger than %d bytes", maxDecode)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("algorithm: state is not valid JSON: %w", err)
	}
	if !isSpace(b[dec.InputOffset():]) { // dec.More would let a stray '}' or ']' through
		return errors.New("algorithm: state has data after its JSON object")
	}
	return nil
}

// checkWindow reports an error unless w (seconds) is a window a rule may
// have.
func checkWindow(w int64) error {
	if w < 1 || w > maxWindowSeconds {
		return fmt.Errorf("algorithm: state window %d is not from 1 to %d seconds", w, int64(maxWindowSeconds))
	}
	return nil
}
