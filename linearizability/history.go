package linearizability

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/ratelab/ratelab"
)

// History is every hit the processes of one run recorded, as porcupine
// operations: Input is an input, Output an output, ClientId the process
// (the order of its history file), Metadata the name of the request the
// hit was made for ("" if none).
type History struct {
	Ops       []porcupine.Operation
	Processes int
	Pending   int // calls with no return: killed mid-hit, failed, or not counted
	// Kills maps each process (ClientId) that killed itself mid-hit to
	// the instant (CLOCK_MONOTONIC, ns) it wrote just before its SIGKILL.
	Kills map[int]int64
	// Requests, for a run whose clients were recorded (RecordModel), is
	// what each client saw of each request it sent.
	Requests []Request
}

// Span is the time between the earliest and the latest instant the
// history's hits gave their store.
func (h History) Span() time.Duration {
	if len(h.Ops) == 0 {
		return 0
	}
	first, last := h.Ops[0].Input.(input).At, h.Ops[0].Input.(input).At
	for _, op := range h.Ops {
		at := op.Input.(input).At
		first, last = minTime(first, at), maxTime(last, at)
	}
	return last.Sub(first)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// input is what a hit gave its store.
type input struct {
	Rule ratelab.Rule // normalized
	Key  string
	At   time.Time
}

// output is what the store answered, if anyone was told (Known).
type output struct {
	Known      bool
	Allowed    bool
	Remaining  int64
	RetryAfter time.Duration
}

// Read reads the history files in dir, which NewRecorder wrote. A call
// with no return becomes an operation that returns at the end of time
// with an unknown output: the checker may place it anywhere after its
// call.
func Read(dir string) (History, error) {
	names, err := filepath.Glob(filepath.Join(dir, "h-*.jsonl"))
	if err != nil {
		return History{}, err
	}
	slices.Sort(names)
	h := History{Processes: len(names)}
	for client, name := range names {
		ops, kills, err := readFile(name, client)
		if err != nil {
			return History{}, err
		}
		if len(kills) > 0 {
			if h.Kills == nil {
				h.Kills = map[int]int64{}
			}
			h.Kills[client] = kills[0]
		}
		for _, op := range ops {
			if !op.Output.(output).Known {
				h.Pending++
			}
		}
		h.Ops = append(h.Ops, ops...)
	}
	return h, nil
}

// readFile reads one process's history: its operations, and the instant
// it killed itself, if it did.
func readFile(name string, client int) (ops []porcupine.Operation, kills []int64, err error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	at := map[int64]int{} // op number → its place in ops
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, nil, fmt.Errorf("linearizability: %s:%d: %w", name, line, err)
		}
		if e.Kill != 0 {
			kills = append(kills, e.Kill)
			continue
		}
		if err := add(&ops, at, e, client); err != nil {
			return nil, nil, fmt.Errorf("linearizability: %s:%d: %w", name, line, err)
		}
	}
	return ops, kills, sc.Err()
}

// add adds the call or return e to ops.
func add(ops *[]porcupine.Operation, at map[int64]int, e event, client int) error {
	if e.Rule != nil { // a call
		if err := e.Rule.Validate(); err != nil {
			return err
		}
		if _, dup := at[e.Op]; dup {
			return fmt.Errorf("operation %d called twice", e.Op)
		}
		at[e.Op] = len(*ops)
		*ops = append(*ops, porcupine.Operation{ClientId: client, Call: e.Call, Return: math.MaxInt64,
			Input:  input{Rule: e.Rule.Normalized(), Key: e.Key, At: time.Unix(0, e.At).UTC()},
			Output: output{}, Metadata: e.Req})
		return nil
	}
	i, ok := at[e.Op]
	if !ok || (*ops)[i].Output.(output).Known {
		return fmt.Errorf("a return of operation %d without its call, or twice", e.Op)
	}
	(*ops)[i].Return = e.Return
	(*ops)[i].Output = output{Known: true, Allowed: e.Allowed, Remaining: e.Remaining, RetryAfter: e.RetryAfter}
	return nil
}

// Record makes a history directory in tmp, runs run with it — run starts
// the processes that record there — and returns the history they
// recorded. The directory is removed.
func Record(tmp string, run func(dir string) error) (History, error) {
	dir, err := os.MkdirTemp(tmp, "history-")
	if err != nil {
		return History{}, fmt.Errorf("linearizability: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := run(dir); err != nil {
		return History{}, err
	}
	return Read(dir)
}

// RecordHere is Record for hits this process makes: run is given the
// recorder of a history directory of its own.
func RecordHere(tmp string, run func(*Recorder) error) (History, error) {
	return Record(tmp, func(dir string) error {
		rec, err := NewRecorder(dir, 0)
		if err != nil {
			return err
		}
		defer rec.Close()
		return run(rec)
	})
}
