package linearizability

import (
	"context"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
)

// The specification must not be the code it checks: no non-test file of
// this package imports package algorithm, whose steps the stores run.
func TestSpecImportsNoAlgorithm(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/ratelab/ratelab/algorithm" {
				t.Errorf("%s imports %s: the model would run the code it checks", name, p)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no file checked")
	}
}

// specRules are rules of each algorithm, short enough that random hits
// cross many windows.
var specRules = []ratelab.Rule{
	{Name: "f", Limit: 3, Window: 2 * time.Second},
	{Name: "s", Limit: 4, Window: 3 * time.Second, Algorithm: ratelab.SlidingCounter},
	{Name: "s1", Limit: 1, Window: time.Second, Algorithm: ratelab.SlidingCounter},
	{Name: "l", Limit: 3, Window: 2 * time.Second, Algorithm: ratelab.SlidingLog},
	{Name: "g", Limit: 7, Window: 3 * time.Second, Algorithm: ratelab.GCRA, Burst: 3},
	{Name: "g1", Limit: 1, Window: time.Second, Algorithm: ratelab.GCRA},
}

// The specification decides every hit as the correct steps do: random
// hits, a few milliseconds to a few seconds apart, some stamped before
// the one before them (a clock read before a lock wait).
func TestSpecAgreesWithAlgorithm(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 1))
	for _, r := range specRules {
		r = r.Normalized()
		var old []byte
		var state any
		at := t0.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
		refused := 0
		for i := range 5000 {
			at = at.Add(time.Duration(rng.IntN(1500)-150) * time.Millisecond)
			res, err := algorithm.Take(nil, old, r, at)
			if err != nil {
				t.Fatal(err)
			}
			if res.State != nil {
				old = res.State
			}
			var got told
			state, got = specStep(state, r, at)
			d := res.Decision
			if want := (told{d.Allowed, d.Remaining, d.RetryAfter}); got != want {
				t.Fatalf("%s, hit %d at %s: the specification says %+v, algorithm.Take %+v (state %s)", r, i, at.Format(time.RFC3339Nano), got, want, old)
			}
			if !d.Allowed {
				refused++
			}
		}
		if refused == 0 || refused == 5000 {
			t.Errorf("%s: %d of 5000 refused: the hits never reached the limit, or never left it", r, refused)
		}
	}
}

// stepStore is a store in this process that steps each key's encoding
// with step under one mutex: the memory store, with its step replaced.
type stepStore struct {
	mu    sync.Mutex
	state map[string][]byte
	step  func(old []byte, r ratelab.Rule, now time.Time) (algorithm.Result, error)
}

func (s *stepStore) TakeAt(_ context.Context, r ratelab.Rule, key string, now time.Time) (ratelab.Decision, error) {
	r = r.Normalized()
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := s.step(s.state[r.StateKey(key)], r, now)
	if err != nil {
		return ratelab.Decision{}, err
	}
	if res.State != nil {
		s.state[r.StateKey(key)] = res.State
	}
	res.Decision.Rule, res.Decision.Source = r, ratelab.Shared
	return res.Decision, nil
}

// take is the correct step, package algorithm's.
func take(old []byte, r ratelab.Rule, now time.Time) (algorithm.Result, error) {
	return algorithm.Take(nil, old, r, now)
}

// The decision bugs of issue #43, each a copy or a wrapper of a correct
// step; package algorithm is not touched.
var mutants = map[string]func(old []byte, r ratelab.Rule, now time.Time) (algorithm.Result, error){
	// algorithm/fixed.go with count <= r.Limit+1.
	"fixed window, limit + 1 allowed": func(old []byte, r ratelab.Rule, now time.Time) (algorithm.Result, error) {
		res, err := algorithm.Take(nil, old, r, now)
		if s, _ := algorithm.DecodeFixed(res.State); err == nil && s.Count == r.Limit+1 {
			res.Decision = algorithm.FixedDecision(r, r.Limit, s.ResetAt, now)
		}
		return res, err
	},
	// algorithm/gcra.go with one interval more of burst.
	"gcra, one extra interval of burst": func(old []byte, r ratelab.Rule, now time.Time) (algorithm.Result, error) {
		r.Burst++
		return algorithm.Take(nil, old, r, now)
	},
	// algorithm/fixed.go resetting once reset_at < now, not <=: the window
	// is reset one second late, at its boundary.
	"fixed window, reset past the boundary": func(old []byte, r ratelab.Rule, now time.Time) (algorithm.Result, error) {
		s, err := algorithm.DecodeFixed(old)
		if err != nil {
			return algorithm.Result{}, err
		}
		if s.ResetAt < now.Unix() {
			s = algorithm.Fixed{ResetAt: now.Unix() + int64(r.Window/time.Second)}
		}
		s.Count++
		return algorithm.Result{Decision: algorithm.FixedDecision(r, s.Count, s.ResetAt, now), State: s.Append(nil)}, nil
	},
}

// load is what the mutant tests send: 8 clients at once, each hitting
// twice at t0 and twice at the instant the first window is over, every
// instant given, none waited for.
func load(rec *Recorder, s ratelab.Store, r ratelab.Rule) error {
	store := rec.Store(s)
	for _, at := range []time.Time{t0, t0.Add(r.Window)} {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				for range 2 {
					if _, err := store.TakeAt(context.Background(), r, "k", at); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
	}
	return nil
}

// checkStore records load on s and checks it.
func checkStore(t *testing.T, s ratelab.Store, r ratelab.Rule) Verdict {
	t.Helper()
	h, err := RecordHere(t.TempDir(), func(rec *Recorder) error { return load(rec, s, r) })
	if err != nil {
		t.Fatal(err)
	}
	v, err := Check(h, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if v.Ops != 32 || v.Pending != 0 {
		t.Fatalf("%d operations, %d without an answer; want 32 and 0", v.Ops, v.Pending)
	}
	return v
}

// Each decision bug makes a history the checker reports not
// linearizable, on every run: whatever order the clients' hits take,
// four allowed at once under a limit of 3, three under a burst of 2, or
// none allowed once the window is over, is more than or less than any
// one-at-a-time order gives. The correct step, on the same load, passes.
func TestMutantsAreNotLinearizable(t *testing.T) {
	fixed := ratelab.Rule{Name: "t", Limit: 3, Window: time.Minute}
	gcraRule := ratelab.Rule{Name: "t", Limit: 6, Window: time.Minute, Algorithm: ratelab.GCRA, Burst: 2}
	for name, r := range map[string]ratelab.Rule{
		"fixed window, limit + 1 allowed":       fixed,
		"gcra, one extra interval of burst":     gcraRule,
		"fixed window, reset past the boundary": fixed,
	} {
		t.Run(name, func(t *testing.T) {
			if v := checkStore(t, &stepStore{state: map[string][]byte{}, step: mutants[name]}, r); v.Linearizable {
				t.Errorf("the mutant: %s, want not linearizable", v)
			}
			if v := checkStore(t, &stepStore{state: map[string][]byte{}, step: take}, r); !v.Linearizable {
				t.Errorf("the correct step: %s, want linearizable", v)
			}
		})
	}
	for _, r := range specRules {
		if v := checkStore(t, &stepStore{state: map[string][]byte{}, step: take}, r); !v.Linearizable {
			t.Errorf("the correct step, %s: %s, want linearizable", r, v)
		}
	}
}
