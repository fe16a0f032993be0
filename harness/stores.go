package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/breaker"
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

// workerLogger is the log of a process that serves requests, to w.
func workerLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// procStore is the store of one process: behind its fail policy, with
// its kind and the store as the kind made it.
type procStore struct {
	ratelab.Store // behind the fail policy
	io.Closer
	raw  ratelab.Store
	kind Kind
	brk  *breaker.Breaker // the host's, or nil
}

// down reports whether the host's breaker says the store does not answer.
func (p procStore) down() bool { return p.brk != nil && p.brk.Down() }

// prepare runs the kind's Prepare, if it has one.
func (p procStore) prepare(ctx context.Context) error {
	if p.kind.Prepare == nil {
		return nil
	}
	return p.kind.Prepare(ctx, p.raw)
}

// newStore makes the process's store, behind a's fail policy. Called once
// per process, it is exactly what the lesson is about: a memory store
// made here lives and dies with this process; the others keep their
// states outside it.
func (a App) newStore(logger *slog.Logger) (procStore, error) {
	k, err := kindOf(a.Store)
	if err != nil {
		return procStore{}, err
	}
	raw, closer, err := k.Open(a, logger)
	if err != nil {
		return procStore{}, err
	}
	s, brk := raw, (*breaker.Breaker)(nil)
	if a.Breaker != "" {
		if brk, err = breaker.Open(a.Breaker); err != nil {
			closer.Close()
			return procStore{}, fmt.Errorf("harness: %w", err)
		}
		s, closer = breaker.Wrap(raw, brk), closers{closer, brk}
	}
	var local ratelab.Store
	if a.FailPolicy == ratelab.FailLocal {
		local = &brokeninmemory.Store{MaxKeys: brokeninmemory.FallbackKeys}
	}
	safe, err := ratelab.WithFailPolicy(s, a.FailPolicy, local, logger)
	if err != nil {
		closer.Close()
		return procStore{}, err
	}
	return procStore{Store: safe, Closer: closer, raw: raw, kind: k, brk: brk}, nil
}

// closers closes each of its closers, in order.
type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

var wrappers = struct {
	sync.RWMutex
	m map[string]func(arg string, s ratelab.Store) (ratelab.Store, error)
}{m: map[string]func(string, ratelab.Store) (ratelab.Store, error){}}

// RegisterWrap registers a wrapper of each process's store, which an
// App names in its Wrap as "name:argument": package linearizability's
// recorder registers one. It panics if name is registered twice.
func RegisterWrap(name string, wrap func(arg string, s ratelab.Store) (ratelab.Store, error)) {
	wrappers.Lock()
	defer wrappers.Unlock()
	if _, dup := wrappers.m[name]; dup {
		panic(fmt.Sprintf("harness: RegisterWrap(%q) twice", name))
	}
	wrappers.m[name] = wrap
}

// wrap puts s inside the wrapper spec names ("name:argument"); "" is s.
func wrap(spec string, s ratelab.Store) (ratelab.Store, error) {
	if spec == "" {
		return s, nil
	}
	name, arg, _ := strings.Cut(spec, ":")
	wrappers.RLock()
	w, ok := wrappers.m[name]
	wrappers.RUnlock()
	if !ok {
		return nil, fmt.Errorf("harness: no wrapper %q registered in this binary", name)
	}
	return w(arg, s)
}

// OpenStore makes a's store in this process, behind a's fail policy, as
// every process the harness starts makes its own, and returns it with
// what releases it: for a child of another package's that hits a store of
// any registered kind.
func OpenStore(a App, logger *slog.Logger) (ratelab.Store, io.Closer, error) {
	if err := a.checkStore(); err != nil {
		return nil, nil, err
	}
	s, err := a.newStore(logger)
	return s.Store, s.Closer, err
}
