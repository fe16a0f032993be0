package algorithm_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
)

// Each hit gets back its own rule, checked and normalized, whatever rules
// the hits before it had: the remembered last rule is only a shortcut.
func TestAdmitReturnsEachHitsOwnRule(t *testing.T) {
	a := ratelab.Rule{Name: "a", Limit: 10, Window: time.Minute}
	b := ratelab.Rule{Name: "b", Limit: 5, Window: time.Hour, Algorithm: ratelab.GCRA}
	aAgain := ratelab.Rule{Name: "a", Limit: 10, Window: time.Minute, Algorithm: ratelab.FixedWindow} // a, normalized
	clash := ratelab.Rule{Name: "a", Limit: 20, Window: time.Minute}                                  // a's name, another limit
	bad := ratelab.Rule{Name: "a", Limit: 0, Window: time.Minute}
	var rs algorithm.Rules
	for i, tc := range []struct {
		r       ratelab.Rule
		want    ratelab.Rule
		wantErr bool
	}{
		{a, a.Normalized(), false},
		{a, a.Normalized(), false},
		{b, b.Normalized(), false},
		{a, a.Normalized(), false},
		{aAgain, a.Normalized(), false},
		{clash, ratelab.Rule{}, true},
		{bad, ratelab.Rule{}, true},
		{b, b.Normalized(), false},
		{clash, ratelab.Rule{}, true},
	} {
		got, err := rs.Admit(tc.r, t0)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("hit %d, Admit(%v) = %v, %v; want %v, error %t", i, tc.r, got, err, tc.want, tc.wantErr)
		}
	}
	var conflict *ratelab.ConflictError
	if _, err := rs.Admit(clash, t0); !errors.As(err, &conflict) {
		t.Errorf("Admit(%v) after %v = %v, want a *ratelab.ConflictError", clash, a, err)
	}
}

// BenchmarkAdmit measures a hit's check of its rule: one rule every hit
// (the common case, a comparison) and two in turns (a map lookup).
func BenchmarkAdmit(b *testing.B) {
	rules := []ratelab.Rule{
		{Name: "a", Limit: 10, Window: time.Minute},
		{Name: "b", Limit: 5, Window: time.Hour, Algorithm: ratelab.GCRA},
	}
	for _, n := range []int{1, 2} {
		b.Run([]string{"", "one rule", "two in turns"}[n], func(b *testing.B) {
			var rs algorithm.Rules
			i := 0
			for b.Loop() {
				if _, err := rs.Admit(rules[i%n], t0); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
