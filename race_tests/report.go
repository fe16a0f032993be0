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
	type step struct {
		name string
		run  func(dir string) (Result, error)
	}
	steps := []step{
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
			r, wait, err := HolderKilled(d)
			rep.KillWait = wait
			return r, err
		}},
	}
	for _, s := range steps {
		say("running %s …", s.name)
		dir, err := os.MkdirTemp(base, s.name+"-")
		if err != nil {
			return rep, err
		}
		r, err := s.run(dir)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", s.name, err)
		}
		rep.Results = append(rep.Results, r)
	}
	for _, mode := range StressModes() {
		say("stress %s: %d processes × %d hits …", mode, procs, hits)
		dir, err := os.MkdirTemp(base, "stress-"+mode+"-")
		if err != nil {
			return rep, err
		}
		s, err := Stress(dir, mode, procs, hits)
		if err != nil {
			return rep, fmt.Errorf("stress %s: %w", mode, err)
		}
		rep.Stress = append(rep.Stress, s)
		name := "stress, " + mode
		if mode == "flock" {
			rep.Results = append(rep.Results, result(name+" (fixed_filestore)",
				fmt.Sprintf("%d counted, 0 lost", s.Expected), fmt.Sprintf("%d counted, %d lost", s.Counted, s.Lost())))
		} else {
			rep.Results = append(rep.Results, Result{Case: name, Expected: "(reported, not asserted)",
				Observed: fmt.Sprintf("%d counted, %d lost", s.Counted, s.Lost()), Shown: true})
		}
	}
	return rep, nil
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
		fmt.Fprintf(tw, "%s\t%d × %d\t%d\t%d\t%d\t%.0f\t\n", s.Mode, s.Procs, s.Hits, s.Expected, s.Counted, s.Lost(), s.HitsPerSecond())
	}
	tw.Flush()
	fmt.Fprintf(out, "\nafter SIGKILL of the holder, the waiter went on in %.1f ms\n", float64(r.KillWait.Microseconds())/1000)
}
