package claim

import (
	"bytes"
	"strings"
	"testing"
)

// A demonstration that saw something other than it claims exits non-zero.
func TestVerdict(t *testing.T) {
	var out bytes.Buffer
	if got := Verdict(&out, false, "all good"); got != 1 || !strings.HasPrefix(out.String(), "FAIL:") {
		t.Errorf("Verdict(false) = %d, %q; want 1 and a FAIL line", got, out.String())
	}
	out.Reset()
	if got := Verdict(&out, true, "all good"); got != 0 || out.String() != "PASS: all good\n" {
		t.Errorf("Verdict(true) = %d, %q; want 0 and the PASS line", got, out.String())
	}
}

func TestClaimsAndTable(t *testing.T) {
	cs := []Claim{
		{Case: "a", Expected: "1", Observed: "1"},
		{Case: "b", Expected: "(reported, not asserted)", Observed: "7", Shown: true},
		{Case: "c", Expected: "1", Observed: "2"},
	}
	for i, want := range []string{"ok", "shown", "FAIL"} {
		if got := cs[i].Mark(); got != want {
			t.Errorf("claim %s: Mark() = %q, want %q", cs[i].Case, got, want)
		}
	}
	if All(cs) || !All(cs[:2]) {
		t.Errorf("All: got %v and %v, want false and true", All(cs), All(cs[:2]))
	}
	var out bytes.Buffer
	Table(&out, "case", cs)
	want := "case  expected                  observed  verdict\na     1                         1         ok\nb     (reported, not asserted)  7         shown\nc     1                         2         FAIL\n"
	if out.String() != want {
		t.Errorf("Table:\n%s\nwant:\n%s", out.String(), want)
	}
}
