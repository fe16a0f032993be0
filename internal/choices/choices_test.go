package choices

import "testing"

func TestOr(t *testing.T) {
	for _, tt := range []struct {
		xs   []string
		want string
	}{
		{nil, ""},
		{[]string{"a"}, "a"},
		{[]string{"a", "b"}, "a or b"},
		{[]string{"fixed", "sliding", "log", "gcra"}, "fixed, sliding, log or gcra"},
	} {
		if got := Or(tt.xs); got != tt.want {
			t.Errorf("Or(%q) = %q, want %q", tt.xs, got, tt.want)
		}
	}
}
