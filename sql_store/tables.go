package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ratelab/ratelab"
)

// Exec runs one statement q with args and returns how many rows it
// affected.
type Exec func(ctx context.Context, q string, args ...any) (int64, error)

// Tables are a store's statements on its two tables other than hits,
// with the tables' prefix filled in.
type Tables struct {
	Create []string // CREATE … IF NOT EXISTS, in order
	// ResetFixed and ResetState delete one row, its key the argument.
	ResetFixed, ResetState string
	// SweepFixed and SweepState delete at most a batch of the rows that
	// are over before a cutoff; their arguments are the cutoff and the
	// batch.
	SweepFixed, SweepState string
	// ClearFixed and ClearState delete every row.
	ClearFixed, ClearState string
	// ProbeFixed and ProbeState are writes that change no row (a DELETE
	// … WHERE 1 = 0): CheckWrites runs them.
	ProbeFixed, ProbeState string
	exec                   Exec
}

// Names fills in the tables' names in a store's SQL, where it writes
// {fixed} and {state}.
func Names(prefix string) *strings.Replacer {
	return strings.NewReplacer("{fixed}", prefix+"fixed", "{state}", prefix+"state")
}

// CreateTables creates the store's two tables if they do not exist.
func (b *Base) CreateTables(ctx context.Context) error {
	for _, q := range b.tables.Create {
		if _, err := b.tables.exec(ctx, q); err != nil {
			return fmt.Errorf("%s: create tables: %w", b.Pkg, err)
		}
	}
	return nil
}

// CheckWrites runs the two probes, writes that change no row, which a
// server refuses as it would a hit's write when it takes no writes: a
// read-only server or session (PostgreSQL's
// default_transaction_read_only, a hot standby; MariaDB's read_only,
// tx_read_only). Found at start, that is a configuration error; found
// by every hit, it was an outage the fail policy let through, uncounted
// (the attacker's finding at 5879fdb).
func (b *Base) CheckWrites(ctx context.Context) error {
	for _, q := range []string{b.tables.ProbeFixed, b.tables.ProbeState} {
		if _, err := b.tables.exec(ctx, q); err != nil {
			return fmt.Errorf("%s: a write to its tables: %w", b.Pkg, err)
		}
	}
	return nil
}

// Reset forgets the state of key under r: one DELETE, atomic against any
// hit that runs before or after it, within the timeout.
func (b *Base) Reset(ctx context.Context, r ratelab.Rule, key string) error {
	if err := r.Validate(); err != nil {
		return err
	}
	r = r.Normalized()
	ctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	q := b.tables.ResetState
	if r.Algorithm == ratelab.FixedWindow {
		q = b.tables.ResetFixed
	}
	if _, err := b.tables.exec(ctx, q, Key(r, key)); err != nil {
		return fmt.Errorf("%s: reset: %w", b.Pkg, err)
	}
	return nil
}

// Clear deletes every state in the store's two tables, the tables left
// in place: every key of every rule starts afresh.
func (b *Base) Clear(ctx context.Context) error {
	for _, q := range []string{b.tables.ClearFixed, b.tables.ClearState} {
		if _, err := b.tables.exec(ctx, q); err != nil {
			return fmt.Errorf("%s: clear: %w", b.Pkg, err)
		}
	}
	return nil
}

// Sweep deletes the states that can no longer weigh on a hit at now,
// MaxSkew later — windows over, allowances full again — SweepBatch rows
// per DELETE until a DELETE deletes fewer, and returns how many rows it
// deleted.
func (b *Base) Sweep(ctx context.Context, now time.Time) (int64, error) {
	var total int64
	cutoff := now.Add(-ratelab.MaxSkew).Unix()
	for _, q := range []string{b.tables.SweepFixed, b.tables.SweepState} {
		for {
			n, err := b.tables.exec(ctx, q, cutoff, SweepBatch)
			if err != nil {
				return total, fmt.Errorf("%s: sweep: %w", b.Pkg, err)
			}
			total += n
			if n < SweepBatch {
				break
			}
		}
	}
	return total, nil
}
