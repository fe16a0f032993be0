package linearizability

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/ratelab/ratelab"
)

var (
	rule3 = ratelab.Rule{Name: "t", Limit: 3, Window: time.Minute}.Normalized()
	t0    = time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
)

// hit is an operation of rule3 at t0 from call to ret; ret < 0 is a hit
// nobody was told about; remaining < 0 a refusal.
func hit(client int, call, ret, remaining int64) porcupine.Operation {
	op := porcupine.Operation{ClientId: client, Call: call, Return: ret,
		Input: input{Rule: rule3, Key: "k", At: t0}}
	switch {
	case ret < 0:
		op.Return, op.Output = math.MaxInt64, output{}
	case remaining < 0:
		op.Output = output{Known: true, RetryAfter: time.Minute}
	default:
		op.Output = output{Known: true, Allowed: true, Remaining: remaining}
	}
	return op
}

func TestModel(t *testing.T) {
	for _, tt := range []struct {
		name string
		ops  []porcupine.Operation
		want bool
	}{
		{"one after another", []porcupine.Operation{hit(0, 0, 1, 2), hit(1, 2, 3, 1), hit(0, 4, 5, 0), hit(1, 6, 7, -1)}, true},
		{"overlapping, answered in the other order", []porcupine.Operation{hit(0, 0, 10, 1), hit(1, 1, 5, 2)}, true},
		{"two told the same count, overlapping", []porcupine.Operation{hit(0, 0, 10, 2), hit(1, 1, 5, 2)}, false},
		{"two told the same count, one after the other", []porcupine.Operation{hit(0, 0, 1, 2), hit(1, 2, 3, 2)}, false},
		{"an order real time forbids", []porcupine.Operation{hit(0, 0, 1, 1), hit(1, 2, 3, 2)}, false},
		{"refused while hits were left", []porcupine.Operation{hit(0, 0, 1, -1)}, false},
		// A hit that counted and was never answered still explains the
		// count the next client saw: never dropped.
		{"an unanswered hit that counted", []porcupine.Operation{hit(0, 0, -1, 0), hit(1, 2, 3, 1)}, true},
		// And one that may not have happened changes nothing.
		{"an unanswered hit that did not count", []porcupine.Operation{hit(0, 0, -1, 0), hit(1, 2, 3, 2), hit(1, 4, 5, 1)}, true},
		{"an unanswered hit cannot come before its call", []porcupine.Operation{hit(1, 0, 1, 1), hit(0, 2, -1, 0)}, false},
	} {
		if got := porcupine.CheckOperations(model, tt.ops); got != tt.want {
			t.Errorf("%s: linearizable %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPartitionsByRuleAndKey(t *testing.T) {
	a, b := hit(0, 0, 1, 2), hit(1, 0, 1, 2)
	b.Input = input{Rule: rule3, Key: "other", At: t0}
	if !porcupine.CheckOperations(model, []porcupine.Operation{a, b}) {
		t.Error("two keys each at its first hit: not linearizable, want linearizable")
	}
}

func TestRecordReadCheck(t *testing.T) {
	dir := t.TempDir()
	rec, err := NewRecorder(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	s := rec.Store(fakeStore{remaining: 2})
	for range 2 {
		if _, err := s.TakeAt(t.Context(), rule3, "k", t0); err != nil {
			t.Fatal(err)
		}
	}
	h, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Ops) != 2 || h.Pending != 0 || h.Processes != 1 {
		t.Fatalf("got %d ops, %d pending, %d processes; want 2, 0, 1", len(h.Ops), h.Pending, h.Processes)
	}
	// fakeStore tells both hits 2 left: no order explains it.
	v, err := Check(h, filepath.Join(dir, "h.html"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if v.Linearizable || !strings.HasPrefix(v.String(), "not linearizable: 2 operations") {
		t.Errorf("got %q, want not linearizable, 2 operations", v)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "h.html")); err != nil || !strings.Contains(string(b), "<html") {
		t.Errorf("visualization: %v, %d bytes", err, len(b))
	}
}

func TestReadRefusesBrokenHistories(t *testing.T) {
	call := `{"op":1,"call":5,"rule":{"Name":"t","Limit":3,"Window":60000000000},"key":"k","at":1}`
	for name, text := range map[string]string{
		"a return without a call": `{"op":1,"ret":5,"allowed":true}`,
		"a call twice":            call + "\n" + call,
		"a line that is not JSON": call + "\n{",
		"a rule no store accepts": `{"op":1,"call":5,"rule":{"Name":"t","Limit":0},"key":"k"}`,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "h-1-x.jsonl"), []byte(text+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(dir); err == nil {
			t.Errorf("%s: Read returned no error", name)
		}
	}
}

func TestCheckRefusesAnEmptyHistory(t *testing.T) {
	if _, err := Check(History{}, "", 0); err == nil {
		t.Error("an empty history: no error, want one (a run that recorded nothing proves nothing)")
	}
}

func TestFaultTokensAreTakenOnce(t *testing.T) {
	dir := t.TempDir()
	if err := PlantKills(dir, 2); err != nil {
		t.Fatal(err)
	}
	if err := PlantStops(dir, 2); err != nil {
		t.Fatal(err)
	}
	r := &Recorder{dir: dir, faults: 2}
	var got []int
	for range 5 {
		f, _ := r.claimFault()
		got = append(got, f)
	}
	if want := []int{killBefore, stopBefore, killAfter, stopAfter, faultNone}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// fakeStore tells every hit the same remaining count.
type fakeStore struct{ remaining int64 }

func (f fakeStore) TakeAt(_ context.Context, r ratelab.Rule, _ string, _ time.Time) (ratelab.Decision, error) {
	return ratelab.Decision{Rule: r, Allowed: true, Remaining: f.remaining}, nil
}

// A long history is drawn with its first two hits, the four before the
// red one and the one after, and its last; a short one whole.
func TestRowsShown(t *testing.T) {
	for _, tt := range []struct {
		n, bad int
		want   []int
	}{
		{8, 1, []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{62, 31, []int{0, 1, 27, 28, 29, 30, 31, 32, 61}},
		{20, -1, []int{0, 1, 19}},
		{20, 2, []int{0, 1, 2, 3, 19}},
	} {
		var got []int
		for i, s := range rowsShown(tt.n, tt.bad) {
			if s {
				got = append(got, i)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("rowsShown(%d, %d) = %v, want %v", tt.n, tt.bad, got, tt.want)
		}
	}
}
