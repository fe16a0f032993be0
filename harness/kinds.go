package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/choices"
)

// StoreKind names a kind of store the harness can run in each of its
// processes: "memory" and "file", the lesson's, and any other kind a
// package registers (Register), as database/sql's drivers register.
type StoreKind string

// The lesson's kinds.
const (
	Memory StoreKind = "memory"
	File   StoreKind = "file"
)

// Reach says which processes see one store's state: what the lesson is
// about.
type Reach int

const (
	// OneProcess: each process its own state (a map in its memory).
	OneProcess Reach = iota
	// OneMachine: every process of one machine (files under flock(2)).
	OneMachine
	// AllHosts: every process on every host that reaches one server.
	AllHosts
)

// Kind is how the harness runs one kind of store.
type Kind struct {
	// Reach says which processes share the store's state.
	Reach Reach
	// Shares names, for a verdict, what the processes share: "one file",
	// "one Redis".
	Shares string
	// Check reports what an App lacks for this kind, before any process
	// starts; nil checks nothing.
	Check func(a App) error
	// Open makes the store of one process, and what releases it (never
	// nil); the process then puts it behind a's fail policy.
	Open func(a App, log *slog.Logger) (ratelab.Store, io.Closer, error)
	// Prepare, if not nil, gets a store made by Open ready for its first
	// hit, as a CGI process must since none outlives its request (a
	// database store connects and creates its tables). An error wrapping
	// ErrConfig is a configuration error; any other is an outage, which
	// the fail policy decides once hits come.
	Prepare func(ctx context.Context, s ratelab.Store) error
}

// ErrConfig is wrapped by the errors of a Kind's Prepare when the store's
// server refused the settings or they cannot be parsed: a configuration
// error to fix before serving.
var ErrConfig = errors.New("harness: configuration error")

var kinds = struct {
	sync.RWMutex
	m     map[StoreKind]Kind
	order []StoreKind // as registered: the lesson's two first
}{order: []StoreKind{Memory, File}, m: map[StoreKind]Kind{
	Memory: {Reach: OneProcess, Shares: "one map",
		Open: func(App, *slog.Logger) (ratelab.Store, io.Closer, error) {
			return new(brokeninmemory.Store), nopCloser{}, nil
		}},
	// !+store
	File: {Reach: OneMachine, Shares: "one file",
		Check: func(a App) error {
			if a.Dir == "" {
				return errors.New("harness: the file store needs a directory (-dir)")
			}
			return nil
		},
		Open: func(a App, log *slog.Logger) (ratelab.Store, io.Closer, error) {
			s, err := fixedfilestore.New(a.Dir, fixedfilestore.Options{Logger: log})
			return s, s, err
		}},
	// !-store
}}

// Register makes kind runnable by the harness, in every process that
// registered it: a package whose store the harness runs registers it in
// an init function, and a binary that re-executes itself as the
// harness's children imports that package, as a program imports a
// database/sql driver. It panics if kind is registered twice or k has
// no Open.
func Register(kind StoreKind, k Kind) {
	kinds.Lock()
	defer kinds.Unlock()
	if _, dup := kinds.m[kind]; dup || k.Open == nil {
		panic(fmt.Sprintf("harness: Register(%q): registered twice, or without Open", kind))
	}
	kinds.m[kind] = k
	kinds.order = append(kinds.order, kind)
}

// Kinds returns the kinds registered in this process, in the order they
// were registered: the lesson's two first.
func Kinds() []StoreKind {
	kinds.RLock()
	defer kinds.RUnlock()
	return slices.Clone(kinds.order)
}

// kindOf returns the Kind registered as k.
func kindOf(k StoreKind) (Kind, error) {
	kinds.RLock()
	kind, ok := kinds.m[k]
	kinds.RUnlock()
	if !ok {
		return Kind{}, fmt.Errorf("harness: unknown store %q: use %s", k, choices.Or(Kinds()))
	}
	return kind, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// KindOf returns how the harness runs a's store.
func (a App) KindOf() (Kind, error) { return kindOf(a.Store) }

// checkStore returns a's kind, or what a lacks for it.
func (a App) checkStore() (Kind, error) {
	k, err := kindOf(a.Store)
	if err == nil && k.Check != nil {
		err = k.Check(a)
	}
	return k, err
}

// Behind puts s behind a's fail policy: under fail-local, with a memory
// store of this process's own to decide alone while s cannot answer.
func (a App) Behind(s ratelab.Store, logger *slog.Logger) (ratelab.Store, error) {
	var local ratelab.Store
	if a.FailPolicy == ratelab.FailLocal {
		local = &brokeninmemory.Store{MaxKeys: brokeninmemory.FallbackKeys}
	}
	return ratelab.WithFailPolicy(s, a.FailPolicy, local, logger)
}

// OpenStore makes a's store in this process, behind a's fail policy, as
// every process the harness starts makes its own, and returns it with
// what releases it. Called once per process, it is exactly what the lesson
// is about: a memory store made here lives and dies with this process; the
// others keep their states outside it.
func OpenStore(a App, logger *slog.Logger) (ratelab.Store, io.Closer, error) {
	k, err := a.checkStore()
	if err != nil {
		return nil, nil, err
	}
	raw, closer, err := k.Open(a, logger)
	if err != nil {
		return nil, nil, err
	}
	s, err := a.Behind(raw, logger)
	if err != nil {
		closer.Close()
		return nil, nil, err
	}
	return s, closer, nil
}
