package main

import (
	"errors"
	"flag"
	"slices"
	"strings"

	"github.com/ratelab/ratelab/harness"
)

// modeFlags refuses a flag given on the command line that the kind of
// check asked for does not read, rather than run without it: the table of
// claims reads -rows and -runs alone; race_tests' counter reads -clients,
// -hits, -runs and the drawings; a database mistake runs its own two hits.
func modeFlags(fs *flag.FlagSet, store, counter, mistake string) error {
	kind, reads := "", []string(nil)
	switch {
	case store == "" && counter == "":
		kind, reads = "the table of claims (no -store or -counter)", []string{"rows", "runs"}
	case counter != "":
		kind, reads = "-counter", []string{"counter", "clients", "hits", "runs", "html", "svg"}
	case mistake != "":
		kind, reads = "-mistake", []string{"store", "mistake", "runs", "html", "svg"}
	default:
		if fs.Lookup("rows").Value.String() != "" {
			return usagef("-rows picks rows of the table of claims: not with -store or -counter")
		}
		return nil
	}
	return onlyReads(fs, kind, reads...)
}

// onlyReads refuses a flag given on the command line that is not one of
// reads, the flags the mode kind reads.
func onlyReads(fs *flag.FlagSet, kind string, reads ...string) error {
	var unread []string
	fs.Visit(func(f *flag.Flag) {
		if !slices.Contains(reads, f.Name) {
			unread = append(unread, "-"+f.Name)
		}
	})
	if len(unread) > 0 {
		return usagef("%s does not read %s: it runs with -%s alone", kind, strings.Join(unread, ", "), strings.Join(reads, ", -"))
	}
	return nil
}

// workersRead refuses -workers given for a model that has no pool: only
// pool and two-hosts read it.
func (f *flags) workersRead(model string) error {
	if f.isSet("workers") && model != string(harness.Pool) && model != string(harness.TwoHosts) {
		return usagef("-workers applies to -model pool and two-hosts only")
	}
	return nil
}

// errInterrupted ends a check that a signal stopped between two
// histories, its private servers stopped and its directories removed.
var errInterrupted = errors.New("interrupted: the private servers are stopped and the check's directories removed")

// interruptible returns a function that reports whether SIGINT, SIGTERM
// or SIGHUP has arrived since, and what stops listening. A check that
// listens finishes the history it is recording — its processes, sent the
// same signal by a terminal, end it sooner — and then stops, so that its
// deferred clean-up runs: a signal's default action would leave the
// private servers running and the directories behind.
func interruptible() (interrupted func() bool, stop func()) {
	ctx, stop := stopContext()
	return func() bool { return ctx.Err() != nil }, stop
}
