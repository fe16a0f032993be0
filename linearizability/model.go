package linearizability

import (
	"fmt"

	"github.com/anishathalye/porcupine"

	"github.com/ratelab/ratelab/algorithm"
)

// !+model

// model is a rate limiter's sequential specification: the state of one
// key under one rule is its encoding (empty when absent), and a hit steps
// it exactly as every store does, with algorithm.Take at the hit's own
// instant. A hit fits where the step's decision is the one its client was
// told; a hit nobody was told about fits anywhere.
var model = porcupine.Model{
	Partition: byRuleAndKey,
	Init:      func() any { return "" },
	Step: func(state, in, out any) (bool, any) {
		i, o := in.(input), out.(output)
		res, err := algorithm.Take(nil, []byte(state.(string)), i.Rule, i.At)
		if err != nil {
			return false, state
		}
		next := state
		if res.State != nil {
			next = string(res.State)
		}
		d := res.Decision
		return !o.Known || d.Allowed == o.Allowed && d.Remaining == o.Remaining && d.RetryAfter == o.RetryAfter, next
	},
	DescribeOperation: describeHit,
	DescribeState: func(state any) string {
		if state == "" {
			return "no state"
		}
		return state.(string)
	},
}

// !-model

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
