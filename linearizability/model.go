package linearizability

import (
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"
)

// !+model

// model is a rate limiter's sequential specification for porcupine: the
// state of one key under one rule starts absent, and a hit steps it with
// the specification of its rule's algorithm (spec.go) at the hit's own
// instant. A hit fits where the step's answer is the one its client was
// told; a hit nobody was told about fits anywhere.
var model = porcupine.Model{
	Partition: byRuleAndKey,
	Init:      func() any { return nil },
	Step: func(state, in, out any) (bool, any) {
		i, o := in.(input), out.(output)
		next, t := specStep(state, i.Rule, i.At)
		return !o.Known || t == told{o.Allowed, o.Remaining, o.RetryAfter}, next
	},
	Equal:             sameState,
	DescribeOperation: describeHit,
	DescribeOperationMetadata: func(req any) string {
		if req == "" || req == nil {
			return ""
		}
		return fmt.Sprintf("request %v", req)
	},
	DescribeState: func(state any) string {
		if state == nil {
			return "no state"
		}
		return fmt.Sprintf("%+v", state)
	},
}

// !-model

// sameState reports whether two states of the specification are equal.
func sameState(a, b any) bool {
	if la, ok := a.(logState); ok {
		lb, ok := b.(logState)
		return ok && slices.Equal(la.allowed, lb.allowed)
	}
	return a == b
}

// byRuleAndKey splits a history into the hits of each state: a rule's
// name and algorithm, and a key. Hits of different states never affect
// each other, so a history is linearizable exactly when each part is.
func byRuleAndKey(ops []porcupine.Operation) [][]porcupine.Operation {
	type state struct{ name, alg, key string }
	var parts [][]porcupine.Operation
	index := map[state]int{}
	for _, op := range ops {
		in := op.Input.(input)
		s := state{in.Rule.Name, string(in.Rule.Algorithm), in.Key}
		i, ok := index[s]
		if !ok {
			i = len(parts)
			index[s] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}

// describeHit is how the visualization labels a hit.
func describeHit(in, out any) string {
	i, o := in.(input), out.(output)
	return fmt.Sprintf("hit at %s → %s", i.At.Format("15:04:05.000"), answer(o))
}
