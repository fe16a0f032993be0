//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/ratelab/ratelab/algorithm"
)

// model is the state file as one-at-a-time operations see it.
type model struct {
	present bool
	state   algorithm.Fixed
}

// apply applies operation op to m and returns what its process reports.
func (m *model) apply(op string) string {
	live := m.present && m.state.ResetAt > demoNow().Unix()
	switch op {
	case "hit":
		next, _, _ := m.state.Take(CountRule(), demoNow())
		if !m.present {
			next, _, _ = algorithm.Fixed{}.Take(CountRule(), demoNow())
		}
		m.present, m.state = true, next
		return fmt.Sprintf("told=%d", next.Count)
	case "sweep":
		if !m.present {
			return "gone"
		}
		if live {
			return "kept"
		}
		*m = model{}
		return "removed"
	case "reset":
		if !m.present {
			return "gone"
		}
		*m = model{}
		return "removed"
	}
	return "unknown operation " + op
}

// lost reports whether no one-at-a-time order of the two operations
// explains what the processes reported and what the file holds now.
func (e *explorer) lost(ps [2]proc) (bool, error) {
	final, err := e.final()
	if err != nil {
		return false, err
	}
	for _, order := range [][2]int{{0, 1}, {1, 0}} {
		m := model{present: true, state: e.start()}
		var got [2]string
		for _, i := range order {
			got[i] = m.apply(e.c.Ops[i])
		}
		if got == [2]string{ps[0].result, ps[1].result} && m == final {
			return false, nil
		}
	}
	return true, nil
}

// final reads what the state file holds after a schedule.
func (e *explorer) final() (model, error) {
	b, err := os.ReadFile(e.path)
	if errors.Is(err, fs.ErrNotExist) {
		return model{}, nil
	}
	if err != nil {
		return model{}, err
	}
	st, err := algorithm.DecodeFixed(b)
	if err != nil {
		return model{present: true}, nil // torn: no order writes that
	}
	return model{present: true, state: st}, nil
}
