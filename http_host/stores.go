package httphost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/breaker"
	"github.com/ratelab/ratelab/harness"
)

// workerLogger is the log of a process that serves requests, to w.
func workerLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// procStore is the store of one process: behind its fail policy, with
// its kind and the store as the kind made it.
type procStore struct {
	ratelab.Store // behind the fail policy
	io.Closer
	raw  ratelab.Store
	kind harness.Kind
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

// newStore makes the process's store, behind the host's breaker if it has
// one and its state can be read, and behind the App's fail policy
// (harness.OpenStore, with the breaker between).
func (c checked) newStore(logger *slog.Logger) (procStore, error) {
	k, err := c.App.KindOf()
	if err != nil {
		return procStore{}, err
	}
	raw, closer, err := k.Open(c.App, logger)
	if err != nil {
		return procStore{}, err
	}
	s, brk := raw, (*breaker.Breaker)(nil)
	if c.Breaker != "" {
		// A state that cannot be read is a closed breaker (Breaker.Down):
		// its directory removed under a running serve must not fail
		// every hit.
		if brk, err = breaker.Open(c.Breaker); err != nil {
			logger.Warn("httphost: the breaker's state cannot be read: hits go to the store, which answers for itself", "err", err)
			brk = nil
		} else {
			s, closer = breaker.Wrap(raw, brk), closers{closer, brk}
		}
	}
	safe, err := c.App.Behind(s, logger)
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

// RegisterWrap registers a wrapper of each process's store, which a
// Config names in its Wrap as "name:argument": package linearizability's
// recorder registers one. It panics if name is registered twice.
func RegisterWrap(name string, wrap func(arg string, s ratelab.Store) (ratelab.Store, error)) {
	wrappers.Lock()
	defer wrappers.Unlock()
	if _, dup := wrappers.m[name]; dup {
		panic(fmt.Sprintf("httphost: RegisterWrap(%q) twice", name))
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
		return nil, fmt.Errorf("httphost: no wrapper %q registered in this binary", name)
	}
	return w(arg, s)
}
