package windowboundary

import (
	"bytes"
	"regexp"
	"testing"
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
