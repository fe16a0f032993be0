package httphost

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab"
)

// The attacker's finding at 657a847: a client that sends requests and
// resets its connections made the front write one line per request. The
// requests whose clients went away are one line a ratelab.LogEvery, with
// how many it held back.
func TestClientsGoneAreOneLineALogEvery(t *testing.T) {
	var g gone
	var b bytes.Buffer
	t0 := time.Unix(1_800_000_000, 0)
	for i := range 5 {
		g.note(t0.Add(time.Duration(i)*time.Second), &b, 42, context.Canceled)
	}
	g.note(t0.Add(ratelab.LogEvery), &b, 43, context.Canceled)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{
		"front: worker pid 42: context canceled (its client went away; 0 more such since the last line)",
		"front: worker pid 43: context canceled (its client went away; 4 more such since the last line)",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", b.String(), strings.Join(want, "\n"))
	}
}
