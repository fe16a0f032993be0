package poll

import (
	"errors"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	notYet, gone := errors.New("not yet"), errors.New("gone")
	for _, tc := range []struct {
		name  string
		check func(calls int) error
		calls int   // how many checks Until makes
		want  error // what it returns, by errors.Is
	}{
		{"holds on the third ask", func(n int) error {
			if n < 3 {
				return notYet
			}
			return nil
		}, 3, nil},
		{"stop ends the wait at once", func(int) error { return Stop(gone) }, 1, gone},
		{"never holds: the last error, after the limit", func(int) error { return notYet }, -1, notYet},
	} {
		calls := 0
		err := Until(20*time.Millisecond, time.Millisecond, func() error { calls++; return tc.check(calls) })
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
		if tc.calls > 0 && calls != tc.calls {
			t.Errorf("%s: got %d checks, want %d", tc.name, calls, tc.calls)
		}
		if tc.calls < 0 && calls < 2 {
			t.Errorf("%s: got %d checks, want it to ask again until the limit", tc.name, calls)
		}
	}
}
