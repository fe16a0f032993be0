//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ratelab/ratelab/internal/seqchart"
)

// Figure is one sequence diagram of a demonstration, and the file name
// docs/figures keeps it under.
type Figure struct {
	Name  string
	Chart seqchart.Chart
}

// Figures runs the four pitfalls once more, each in a fresh directory
// under base, and draws each as the sequence of steps it recorded.
func Figures(base string) ([]Figure, error) {
	cases := []struct {
		name, title string
		lanes       []string
		run         func(dir string) (Result, error)
	}{
		{"lost-update.svg", "The lost update: two read-modify-writes without a lock",
			[]string{"process A", "process B", "state file"}, func(d string) (Result, error) { return LostUpdate(d, false) }},
		{"torn-read.svg", "The torn read: the original's truncate-first write, no lock",
			[]string{"process A", "process B", "state file"}, func(d string) (Result, error) { return TornRead(d, TruncateFirst, false) }},
		{"unlink-lock-file.svg", "Unlinking the lock file after unlocking",
			[]string{"process A", "process B", "process C", "the path demo.lock"}, func(d string) (Result, error) { return UnlinkAfterUnlock(d, true) }},
		{"rename-over-lock.svg", "Replacing the locked file by rename",
			[]string{"process A", "the writer", "process C", "the path state.json"}, func(d string) (Result, error) { return ReplaceByRename(d, true) }},
	}
	var out []Figure
	for _, c := range cases {
		r, err := runIn(base, c.name, c.run)
		if err != nil {
			return nil, err
		}
		if !r.Pass() {
			return nil, fmt.Errorf("%s: the run did not show what it claims: %s", c.name, r.Observed)
		}
		out = append(out, Figure{c.name, seqchart.Chart{Title: c.title, Lanes: c.lanes, Steps: r.Trace,
			Outcome: fmt.Sprintf("Observed: %s.", r.Observed)}})
	}
	return out, nil
}

// WriteFigures writes every figure into dir.
func WriteFigures(figs []Figure, dir string) error {
	for _, f := range figs {
		var b bytes.Buffer
		if err := seqchart.Write(&b, f.Chart); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}
