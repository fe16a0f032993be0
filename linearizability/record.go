package linearizability

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab"
	httphost "github.com/ratelab/ratelab/http_host"
)

// event is one line of a history file: a call (Rule, Key, At set) or the
// return of the call with the same Op (Allowed, Remaining, RetryAfter).
type event struct {
	Op         int64         `json:"op"`
	Call       int64         `json:"call,omitempty"` // CLOCK_MONOTONIC, ns
	Return     int64         `json:"ret,omitempty"`  // CLOCK_MONOTONIC, ns
	Rule       *ratelab.Rule `json:"rule,omitempty"`
	Key        string        `json:"key,omitempty"`
	At         int64         `json:"at,omitempty"` // the instant given to the store, Unix ns
	Allowed    bool          `json:"allowed,omitempty"`
	Remaining  int64         `json:"remaining,omitempty"`
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	// Req names the request the hit was made for (httphost.RequestName),
	// on a call; "" for a hit no request named.
	Req string `json:"req,omitempty"`
	// Kill, on a line of its own, is when the process killed itself
	// (CLOCK_MONOTONIC, ns), written just before its SIGKILL.
	Kill int64 `json:"kill,omitempty"`
}

// Recorder writes the hits of one process to a file of its own in a
// history directory, one line per call and one per return, each with one
// write(2): a line written is the kernel's, and survives a SIGKILL that
// comes after it. It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	f      *os.File
	dir    string
	faults int   // the fault tokens this process looks for (fault.go)
	speed  int64 // the history's clock's speed; 0: the instants given (Recording.Speed)
	next   atomic.Int64
}

// MaxSpeed is the fastest the history's clock may run.
const MaxSpeed = 100

// historyEpoch is where the history's clock starts: it reads historyEpoch
// plus CLOCK_MONOTONIC run speed times as fast, the same in every process
// of the host.
var historyEpoch = time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)

// HistoryClock is the instant on the history's clock, run speed times as
// fast, of the CLOCK_MONOTONIC stamp mono (nanoseconds).
func HistoryClock(mono, speed int64) time.Time {
	return historyEpoch.Add(time.Duration(mono * speed))
}

// NewRecorder creates this process's history file in dir, which must
// exist. faults is how many kill and stop tokens (see PlantKills,
// PlantStops) of each kind the process looks for at every hit; 0 for
// none.
func NewRecorder(dir string, faults int) (*Recorder, error) {
	var b [8]byte
	rand.Read(b[:])
	name := filepath.Join(dir, fmt.Sprintf("h-%d-%s.jsonl", os.Getpid(), hex.EncodeToString(b[:])))
	// O_EXCL: never an existing file, nor a symlink planted in its name.
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("linearizability: %w", err)
	}
	return &Recorder{f: f, dir: dir, faults: faults}, nil
}

// Close closes the history file.
func (r *Recorder) Close() error { return r.f.Close() }

// write writes e as one line, with one write(2).
func (r *Recorder) write(e event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err = r.f.Write(append(b, '\n'))
	return err
}

// Store wraps s so that every hit is recorded: the call before it reaches
// s, the decision after. A hit that failed, or that s did not count in
// its shared state (Decision.Source), is left without a return: the
// checker cannot tell whether it happened.
func (r *Recorder) Store(s ratelab.Store) ratelab.Store { return &recording{s, r} }

type recording struct {
	s   ratelab.Store
	rec *Recorder
}

// !+record

// TakeAt records the call, takes the hit in the wrapped store, and
// records the decision.
func (s *recording) TakeAt(ctx context.Context, rule ratelab.Rule, key string, now time.Time) (ratelab.Decision, error) {
	op, call := s.rec.next.Add(1), monotonic()
	if s.rec.speed > 0 {
		now = HistoryClock(call, s.rec.speed)
	}
	if err := s.rec.write(event{Op: op, Call: call, Rule: &rule, Key: key, At: now.UnixNano(), Req: httphost.RequestName(ctx)}); err != nil {
		return ratelab.Decision{}, fmt.Errorf("linearizability: record: %w", err)
	}
	fault, token := s.rec.claimFault()
	if err := s.rec.suffer(fault, token, false); err != nil {
		return ratelab.Decision{}, err
	}
	d, err := s.s.TakeAt(ctx, rule, key, now)
	if ferr := s.rec.suffer(fault, token, true); ferr != nil {
		return ratelab.Decision{}, ferr
	}
	ret := monotonic() // after a stop: when the client is told
	if err != nil || d.Source != ratelab.Shared {
		return d, err
	}
	if werr := s.rec.write(event{Op: op, Return: ret, Allowed: d.Allowed, Remaining: d.Remaining, RetryAfter: d.RetryAfter}); werr != nil {
		return ratelab.Decision{}, fmt.Errorf("linearizability: record: %w", werr)
	}
	return d, nil
}

// !-record
