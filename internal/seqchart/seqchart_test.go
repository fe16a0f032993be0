package seqchart

import (
	"bytes"
	"fmt"
	"testing"
)

// A chart of one lane is as wide as its title and closing line, which
// would otherwise be cut off at the lane's edge.
func TestWidthFitsTheText(t *testing.T) {
	for _, tt := range []struct {
		c    Chart
		want int
	}{
		{Chart{Title: "t", Lanes: []string{"a", "b"}, Outcome: "o"}, left + 2*laneW + 20},
		{Chart{Title: "The file store under single: 4 hits from one client, one at a time", Lanes: []string{"a"}, Outcome: "o"},
			left + textW("The file store under single: 4 hits from one client, one at a time", titleW) + 20},
		{Chart{Title: "t", Lanes: []string{"a"}, Outcome: "after hit 1, no order explains hit 2's answer: not linearizable"},
			left + textW("after hit 1, no order explains hit 2's answer: not linearizable", endW) + 20},
	} {
		var b bytes.Buffer
		if err := Write(&b, tt.c); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`width="%d"`, tt.want); !bytes.Contains(b.Bytes(), []byte(want)) {
			t.Errorf("%q: %.120s; want %s", tt.c.Title, b.String(), want)
		}
	}
}
