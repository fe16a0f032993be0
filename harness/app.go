package harness

import (
	"time"

	"github.com/ratelab/ratelab"
)

// App is the limited endpoint every process of a model serves: one "start
// a demo" rule, keyed as the original keys it, on the client's address,
// in front of a store of one kind. Each process the harness starts gets
// it whole, as one value (env.go).
type App struct {
	Store StoreKind
	Dir   string // base directory of the file store
	// Server is the server of a registered kind (redis://host:port/db, a
	// MariaDB DSN, a postgres:// URL), with the kind's own options in it.
	Server string
	// Prefix names a database store's tables or a Redis store's keys; ""
	// means the store's own.
	Prefix string
	// Conns is how many connections the store of one process may open; 0
	// means the store's default.
	Conns      int
	Limit      int
	Window     time.Duration
	FailPolicy ratelab.FailPolicy
	// Now, if not zero, is the instant every request is handled at, in every
	// process: a fixed clock, so a run's answers are exact.
	Now time.Time
	// Algorithm is the rule's algorithm; "" means fixed.
	Algorithm ratelab.Algorithm
	// Burst is GCRA's burst; 0 means 1.
	Burst int
}

// RuleName and KeyPrefix make the original's key: rule "demo-start"
// counting key "ip:" + the client's address has the state key
// "demo-start:ip:<address>".
const (
	RuleName  = "demo-start"
	KeyPrefix = "ip:"
)

// Rule is the rule the endpoint enforces.
func (a App) Rule() ratelab.Rule {
	return ratelab.Rule{Name: RuleName, Limit: int64(a.Limit), Window: a.Window, Algorithm: a.Algorithm, Burst: int64(a.Burst)}
}

// Validate reports the first thing wrong with a, in words a user can act on.
func (a App) Validate() error {
	_, err := a.Check()
	return err
}

// CheckedApp is an App checked once, where it entered the process
// (App.Check): its store's settings, and its rule, checked and with its
// defaults filled in. What is built from it checks nothing again.
type CheckedApp struct {
	App
	rule ratelab.Rule
}

// CheckedRule is the App's rule, as Check checked it.
func (c CheckedApp) CheckedRule() ratelab.Rule { return c.rule }

// Check reports the first thing wrong with a, in words a user can act
// on, or returns it checked.
func (a App) Check() (CheckedApp, error) {
	if _, err := a.checkStore(); err != nil {
		return CheckedApp{}, err
	}
	r, err := a.Rule().Check()
	if err != nil {
		return CheckedApp{}, err
	}
	return CheckedApp{a, r}, nil
}
