package report

import (
	"bytes"
	"regexp"
	"testing"
	"time"
)

// What the chapter says of the chart: in the two seconds around the
// reset, the fixed window accepts 59 of the 60 requests, the sliding log
// and the sliding counter none beyond the limit, GCRA its burst.
func TestChartCounts(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSVG(&b, DefaultConfig()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range regexp.MustCompile(`font-size="15" font-weight="bold" fill="#[0-9a-f]+">(\d+)</text>`).FindAllStringSubmatch(b.String(), -1) {
		got = append(got, m[1])
	}
	want := []string{"59", "29", "29", "5"}
	if len(got) != len(want) {
		t.Fatalf("counts drawn: got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: got %s accepted in the two seconds, want %s (all: %v)", i, got[i], want[i], got)
		}
	}
}

// The charts and the report print windows with dur; a window of 30
// minutes once lost its zero to a trimmed "0m" and printed as "3".
func TestDur(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{time.Hour, "1h"},
		{2 * time.Hour, "2h"},
		{30 * time.Minute, "30m"},
		{90 * time.Minute, "1h30m"},
		{time.Hour - time.Second, "59m59s"},
		{10 * time.Second, "10s"},
		{2 * time.Minute, "2m"},
	}
	for _, tt := range tests {
		if got := dur(tt.d); got != tt.want {
			t.Errorf("dur(%v): got %q, want %q", tt.d, got, tt.want)
		}
	}
}
