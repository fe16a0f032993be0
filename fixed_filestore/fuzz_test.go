//go:build linux || darwin

package fixedfilestore_test

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
)

// Decode never panics, and whatever it accepts, Encode writes back in a
// form Decode reads as the same state.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"count":1,"reset_at":1783558800}`, `{"count":31,"reset_at":1783558800}`, ``, `null`, `{`,
		`{"count":-1,"reset_at":5}`, `{"count":1e3,"reset_at":5}`, ` {"reset_at":5,"count":2} `,
		`{"count":9223372036854775807,"reset_at":9223372036854775807}`, `{"count":1,"reset_at":5}{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := fixedfilestore.Decode(b)
		if err != nil || len(b) == 0 { // empty is the absent state, never written
			return
		}
		if st.Count < 0 || (len(b) > 0 && st.ResetAt <= 0) {
			t.Fatalf("Decode(%q) accepted an invalid state %+v", b, st)
		}
		if full, err := fixedfilestore.DecodeJSON(b); err != nil || full != st {
			t.Fatalf("Decode(%q) = %+v, but the JSON decoder says %+v, %v", b, st, full, err)
		}
		again, err := fixedfilestore.Decode(fixedfilestore.Encode(nil, st))
		if err != nil || again != st {
			t.Fatalf("round trip of %+v: got %+v, %v", st, again, err)
		}
		// Applying a hit to anything Decode accepts stays sane.
		next, _ := st.Next(t0, 3600e9)
		if next.Count < 1 || next.ResetAt <= t0.Unix() {
			t.Fatalf("Next of %+v gave %+v", st, next)
		}
	})
}

// The same for the sliding-window counter's state.
func FuzzDecodeSliding(f *testing.F) {
	for _, seed := range []string{
		`{"window_start":1783555200,"count":3,"prev_count":30}`, ``, `{"count":3}`, `[]`,
		`{"window_start":-5,"count":0,"prev_count":0}`, `{"window_start":1,"count":1073741824,"prev_count":1073741824}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := fixedfilestore.DecodeSliding(b)
		if err != nil || len(b) == 0 {
			return
		}
		again, err := fixedfilestore.DecodeSliding(fixedfilestore.EncodeSliding(nil, st))
		if err != nil || again != st {
			t.Fatalf("round trip of %+v: got %+v, %v", st, again, err)
		}
		next := st.Next(t0, 3600e9)
		h := next.Hit(t0, 3600e9)
		if h.Count < 1 || next.Count < 1 {
			t.Fatalf("Next of %+v gave %+v, hit %+v", st, next, h)
		}
		if r := next.RetryAt(t0, 3600e9, 30); r.Before(t0) {
			t.Fatalf("RetryAt of %+v is in the past: %v", next, r)
		}
	})
}

var stateFile = regexp.MustCompile(`^[0-9a-f]{64}(\.sliding)?\.json$`)

// Any key — traversal attempts, separators, NUL, huge — names a file of
// fixed shape directly inside the state directory, and a key names the
// same file every time.
func FuzzKeyPath(f *testing.F) {
	for _, seed := range []string{"demo-start:ip:203.0.113.7", "../../etc/passwd", "a/b\\c", "\x00", "", strings.Repeat("k", 5000), "ip:2001:db8::1"} {
		f.Add(seed)
	}
	base := f.TempDir()
	s, err := fixedfilestore.New(base, fixedfilestore.Options{})
	if err != nil {
		f.Fatal(err)
	}
	sl, err := fixedfilestore.New(base, fixedfilestore.Options{Algorithm: ratelab.SlidingCounter})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key string) {
		for _, st := range []*fixedfilestore.Store{s, sl} {
			p := st.Path(key)
			if filepath.Dir(p) != st.Dir() || !stateFile.MatchString(filepath.Base(p)) {
				t.Fatalf("key %q gave path %q outside %s or of the wrong shape", key, p, st.Dir())
			}
			if st.Path(key) != p {
				t.Fatalf("key %q gave two paths", key)
			}
		}
		if !bytes.Equal([]byte(fixedfilestore.FileName(key)), []byte(filepath.Base(s.Path(key)))) {
			t.Fatalf("FileName and Path disagree for %q", key)
		}
	})
}

// The fast path for the canonical form and the full JSON decoder agree on
// everything the fast path accepts (the fuzzer explores the rest).
func TestCanonicalFastPathAgrees(t *testing.T) {
	for _, in := range []string{`{"count":0,"reset_at":1}`, `{"count":17,"reset_at":1783558800}`, `{"count":+1,"reset_at":5}`,
		`{"count":01,"reset_at":5}`, `{"count":1,"reset_at":05}`, `{"count":1,"reset_at":5} `, `{"count":1,"reset_at":-5}`} {
		got, gotErr := fixedfilestore.Decode([]byte(in))
		want, wantErr := fixedfilestore.DecodeJSON([]byte(in))
		if (gotErr == nil) != (wantErr == nil) || got != want {
			t.Errorf("Decode(%s) = %+v, %v; the JSON decoder says %+v, %v", in, got, gotErr, want, wantErr)
		}
	}
}
