package barchart

import (
	"bytes"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	c := Chart{
		Title:    "a <title> & more",
		Segments: []string{"lost", "kept"},
		Bars:     []Bar{{Label: "one", Values: []int{30, 30}}, {Label: "two", Values: []int{0, 30}}},
		Limit:    30,
		Unit:     "hits",
	}
	var a, b bytes.Buffer
	if err := Write(&a, c); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, c); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatal("the same chart gave different bytes")
	}
	got := a.String()
	tests := []struct {
		what, want string
		n          int
	}{
		{"escaped title", "a &lt;title&gt; &amp; more", 1},
		{"segments drawn (zero values left out)", `fill="white">30</text>`, 3},
		{"limit line", "limit 30", 1},
		// The axis runs to 70 (the longest bar, 60, rounded up past the
		// next ten): a 30-wide segment is 3/7 of the 430 px plot.
		{"segment width", `width="184.3"`, 3},
	}
	for _, tt := range tests {
		if n := strings.Count(got, tt.want); n != tt.n {
			t.Errorf("%s: %q occurs %d times, want %d", tt.what, tt.want, n, tt.n)
		}
	}
}
