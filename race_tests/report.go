//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/ratelab/ratelab/internal/claim"
)

// Report is every demonstration, as `ratelab race` prints it.
type Report struct {
	Results []Result
	Stress  []StressResult
	// KillWait is how long the waiter needed after the holder was killed.
	KillWait time.Duration
}

// Pass reports whether every claim held: every choreography, and the flock
// stress run counting exactly. Lock-free stress figures are reported only.
func (r Report) Pass() bool { return claim.All(r.Results) && len(r.Results) > 0 }

// Demo runs every case in fresh directories under base.
func Demo(base string, procs, hits int, progress io.Writer) (Report, error) {
	var rep Report
	say := func(format string, args ...any) {
		if progress != nil {
			fmt.Fprintf(progress, format+"\n", args...)
		}
	}
	for _, c := range rep.cases() {
		say("running %s …", c.name)
		r, err := runIn(base, c.name, c.run)
		if err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, r)
	}
	for _, mode := range StressModes() {
		say("stress %s: %d processes × %d hits …", mode, procs, hits)
		if err := rep.stress(base, mode, procs, hits); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// runIn runs the case called name in a fresh directory under base.
func runIn(base, name string, run func(dir string) (Result, error)) (Result, error) {
	dir, err := os.MkdirTemp(base, name+"-")
	if err != nil {
		return Result{}, err
	}
	r, err := run(dir)
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

// A demoCase is one case of Demo, run in a fresh directory.
type demoCase struct {
	name string
	run  func(dir string) (Result, error)
}

// cases are Demo's cases in report order; the last one notes in r how
// long the waiter waited after the kill.
func (r *Report) cases() []demoCase {
	return []demoCase{
		{"lost-update", func(d string) (Result, error) { return LostUpdate(d, false) }},
		{"lost-update-flock", func(d string) (Result, error) { return LostUpdate(d, true) }},
		{"torn-truncate-first", func(d string) (Result, error) { return TornRead(d, TruncateFirst, false) }},
		{"torn-write-then-truncate", func(d string) (Result, error) { return TornRead(d, WriteThenTruncate, false) }},
		{"torn-flock", func(d string) (Result, error) { return TornRead(d, TruncateFirst, true) }},
		{"unlink", func(d string) (Result, error) { return UnlinkAfterUnlock(d, true) }},
		{"keep", func(d string) (Result, error) { return UnlinkAfterUnlock(d, false) }},
		{"rename", func(d string) (Result, error) { return ReplaceByRename(d, true) }},
		{"in-place", func(d string) (Result, error) { return ReplaceByRename(d, false) }},
		{"paused-hit", PausedHit},
		{"killed", func(d string) (Result, error) {
			res, wait, err := HolderKilled(d)
			r.KillWait = wait
			return res, err
		}},
	}
}

// stress runs the stress mode in a fresh directory under base and adds
// its figures and its case to r: asserted with the lock, reported only
// without.
func (r *Report) stress(base, mode string, procs, hits int) error {
	dir, err := os.MkdirTemp(base, "stress-"+mode+"-")
	if err != nil {
		return err
	}
	s, err := Stress(dir, mode, procs, hits)
	if err != nil {
		return fmt.Errorf("stress %s: %w", mode, err)
	}
	r.Stress = append(r.Stress, s)
	name := "stress, " + mode
	counted := fmt.Sprintf("%d counted, %d lost", s.Counted, s.Lost())
	if s.Torn {
		counted += ": the final state torn, read as a new window"
	}
	if mode == "flock" {
		r.Results = append(r.Results, result(name+" (fixed_filestore)", fmt.Sprintf("%d counted, 0 lost", s.Expected), counted))
	} else {
		r.Results = append(r.Results, Result{Case: name, Expected: "(reported, not asserted)", Observed: counted, Shown: true})
	}
	return nil
}

// Print writes the case table; with timings it adds the stress throughput
// and the wait after the kill, which differ from run to run.
func (r Report) Print(out io.Writer, timings bool) {
	rows := slices.Clone(r.Results)
	for i := range rows {
		if rows[i].Shown && !timings { // lock-free losses differ from run to run
			rows[i].Observed = "varies from run to run"
		}
	}
	claim.Table(out, "case", rows)
	if !timings {
		return
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stress mode\tprocesses × hits\texpected\tcounted\tlost\thits/s\t")
	for _, s := range r.Stress {
		mode := s.Mode
		if s.Torn {
			mode += " (torn: 0)"
		}
		fmt.Fprintf(tw, "%s\t%d × %d\t%d\t%d\t%d\t%.0f\t\n", mode, s.Procs, s.Hits, s.Expected, s.Counted, s.Lost(), s.HitsPerSecond())
	}
	tw.Flush()
	fmt.Fprintf(out, "\nafter SIGKILL of the holder, the waiter went on in %.1f ms\n", float64(r.KillWait.Microseconds())/1000)
}
