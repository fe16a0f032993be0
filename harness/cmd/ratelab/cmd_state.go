package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/choices"
)

// hitResult is the JSON line ratelab hit prints; waits are whole seconds,
// rounded up.
type hitResult struct {
	Allowed    bool   `json:"allowed"`
	Rule       string `json:"rule"`
	Limit      int64  `json:"limit"`
	Remaining  *int64 `json:"remaining,omitempty"` // nil for a hit let through uncounted: no state is known
	RetryAfter *int64 `json:"retry_after,omitempty"`
	ResetAfter *int64 `json:"reset_after,omitempty"`
	// Source is "local" for a hit decided by this process alone (-fail
	// local), "uncounted" for one let through uncounted (-fail open); it
	// and Cause are left out of a hit the store decided.
	Source string `json:"source,omitempty"`
	Cause  string `json:"cause,omitempty"`
}

// resultOf is the line ratelab hit prints of d: no state it does not
// know for a hit let through uncounted, and what decided a hit the store
// did not.
func resultOf(d ratelab.Decision) hitResult {
	res := hitResult{Allowed: d.Allowed, Rule: d.Rule.Name, Limit: d.Rule.Limit}
	if d.Source != ratelab.Uncounted {
		retry, reset := ratelab.CeilSeconds(d.RetryAfter), ratelab.CeilSeconds(d.ResetAfter)
		res.Remaining, res.RetryAfter, res.ResetAfter = &d.Remaining, &retry, &reset
	}
	if d.Source != ratelab.Shared {
		res.Source, res.Cause = d.Source.String(), d.Cause.Error()
	}
	return res
}

// ruleFlags are the flags that name a key under a rule, shared by hit and
// reset; reset, which names a state and takes no hit, has only -key,
// -rule, -algorithm and -dir (a state's name holds no limit or window).
type ruleFlags struct {
	key, name, fail, algo, refusals *string
	burst                           *int
}

func (f *flags) ruleFlags(keyHelp string, hits bool) ruleFlags {
	rf := ruleFlags{
		key:  f.String("key", "", keyHelp),
		name: f.String("rule", "demo-start", "the rule's name: its state is kept apart from every other rule's"),
		algo: f.String("algorithm", "fixed", choices.Or(ratelab.Algorithms())+": the original's fixed window, the sliding-window counter, the sliding log, GCRA"),
		fail: new("open"), refusals: new("default"), burst: new(0),
	}
	f.limit, f.window = 1, time.Second // any valid pair: a state's name holds neither
	f.dirFlag()
	if hits {
		f.StringVar(rf.fail, "fail", "open", "what to do when the state cannot be reached: "+choices.Or(ratelab.FailPolicies())+" (decide in this process alone)")
		f.IntVar(rf.burst, "burst", 0, "gcra: hits allowed at once, 0 to -limit (0 means 1)")
		f.StringVar(rf.refusals, "refusals", "default", "whether refused hits count: default (the algorithm's), count or ignore")
		f.limitFlag().windowFlag().atFlag()
	}
	return rf
}

// parseRule parses args and returns the rule and the fail policy.
func (f *flags) parseRule(rf ruleFlags, args []string) (ratelab.Rule, ratelab.FailPolicy, error) {
	if err := f.parse(args); err != nil {
		return ratelab.Rule{}, 0, err
	}
	if *rf.key == "" {
		return ratelab.Rule{}, 0, usagef("-key is required")
	}
	policy, err := ratelab.ParseFailPolicy(*rf.fail)
	if err != nil {
		return ratelab.Rule{}, 0, usagef("-fail %q: use %s", *rf.fail, choices.Or(ratelab.FailPolicies()))
	}
	alg, err := ratelab.ParseAlgorithm(*rf.algo)
	if err != nil {
		return ratelab.Rule{}, 0, usagef("-algorithm %q: use %s", *rf.algo, choices.Or(ratelab.Algorithms()))
	}
	refusals, err := ratelab.ParseRefusals(*rf.refusals)
	if err != nil {
		return ratelab.Rule{}, 0, usagef("-refusals %q: use default, count or ignore", *rf.refusals)
	}
	if f.isSet("burst") && alg != ratelab.GCRA {
		return ratelab.Rule{}, 0, usagef("-burst applies to -algorithm %s only", ratelab.GCRA)
	}
	rule, err := ratelab.Rule{Name: *rf.name, Limit: int64(f.limit), Window: f.window, Algorithm: alg, Burst: int64(*rf.burst), Refusals: refusals}.Check()
	if err != nil {
		return ratelab.Rule{}, 0, usagef("%v", strings.TrimPrefix(err.Error(), "ratelab: "))
	}
	return rule, policy, nil
}

// cmdReset forgets one key of one rule: an operator unblocking a client.
func cmdReset(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("reset", stdout)
	f.logger = cliLogger(stderr)
	rf := f.ruleFlags("the key to forget, e.g. ip:203.0.113.7 (required)", false)
	rule, _, err := f.parseRule(rf, args)
	if err != nil {
		return 0, err
	}
	store, err := f.openStore()
	if err != nil {
		return 0, err
	}
	defer store.Close()
	if err := store.Reset(context.Background(), rule, *rf.key); err != nil {
		return 0, err
	}
	fmt.Fprintf(stdout, "reset %s %q under rule %q (%s)\n", store.Path(rule, *rf.key), *rf.key, rule.Name, rule.Algorithm)
	return exitOK, nil
}

func cmdHit(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("hit", stdout)
	f.logger = cliLogger(stderr)
	f.DurationVar(&f.wait, "wait", 0, "how long to wait for the key's lock before the hit is refused as busy (0: 3s)")
	rf := f.ruleFlags("the key to count, e.g. ip:203.0.113.7 (required)", true)
	rule, policy, err := f.parseRule(rf, args)
	if err != nil {
		return 0, err
	}
	key := rf.key
	now, err := f.now()
	if err != nil {
		return 0, err
	}
	store, err := f.openStore()
	if err != nil {
		return 0, err
	}
	defer store.Close()
	safe, err := ratelab.WithFailPolicy(store, policy, &brokeninmemory.Store{MaxKeys: brokeninmemory.FallbackKeys}, f.logger)
	if err != nil {
		return 0, err
	}
	l, err := ratelab.NewLimiter(safe, rule)
	if err != nil {
		return 0, usagef("%v", err)
	}
	d, err := l.AllowAt(context.Background(), *key, now)
	if err != nil {
		return 0, err
	}
	if err := json.NewEncoder(stdout).Encode(resultOf(d)); err != nil {
		return 0, err
	}
	if !d.Allowed {
		return exitThrottled, nil
	}
	return exitOK, nil
}

func cmdInspect(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("inspect", stdout)
	f.logger = cliLogger(stderr)
	now, store, err := f.parseForStore(args)
	if err != nil {
		return 0, err
	}
	defer store.Close()
	entries, err := store.Inspect()
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if e.Err != nil {
			fmt.Fprintf(stdout, "%s  unreadable: %v\n", printable(e.Name), e.Err)
			continue
		}
		status := "expired"
		if e.Live(now) {
			status = "live"
		}
		fmt.Fprintf(stdout, "%s  %s  %s\n", e.Name, e.Describe(), status)
	}
	fmt.Fprintf(stdout, "%d state files in %s\n", len(entries), store.Dir())
	return exitOK, nil
}

func cmdSweep(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("sweep", stdout)
	f.logger = cliLogger(stderr)
	now, store, err := f.parseForStore(args)
	if err != nil {
		return 0, err
	}
	defer store.Close()
	report, err := store.SweepAt(now)
	if err != nil {
		return 0, err
	}
	counts := map[fixedfilestore.SweepAction]int{}
	for _, e := range report {
		counts[e.Action]++
		line := fmt.Sprintf("%-7s %s", e.Action, printable(e.Name))
		if e.Reason != "" {
			line += "  (" + e.Reason + ")"
		}
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintf(stdout, "removed %d, kept %d, busy %d, skipped %d (judged by each state at %s)\n",
		counts[fixedfilestore.Removed], counts[fixedfilestore.Kept], counts[fixedfilestore.Busy], counts[fixedfilestore.Skipped],
		now.UTC().Format(time.RFC3339))
	return exitOK, nil
}

// printable returns a file name as it is when it is made of letters,
// digits, '.', '_' and '-', and quoted otherwise: a name planted with a
// newline or an escape sequence cannot fake a line of the report.
func printable(name string) string {
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return strconv.Quote(name)
		}
	}
	return name
}
