package postgresstore_test

import (
	"strings"
	"testing"
	"time"

	postgresstore "github.com/ratelab/ratelab/postgres_store"
)

// The attacker's finding: a password with a bare '@' put its tail in
// serve's logs as a host nobody could resolve (pgx reads the host from
// the first '@', the masking from the last). Such a URL is refused
// before it is used, and the refusal quotes none of it.
func TestAnAtInThePasswordIsRefused(t *testing.T) {
	_, err := postgresstore.OpenPool("postgres://alice:Tr0ub@dor-LEAKED@127.0.0.1:5432/ratelab", time.Second, 1)
	if err == nil || !strings.Contains(err.Error(), "%40") {
		t.Fatalf("got %v, want an error saying to write the '@' as %%40", err)
	}
	if strings.Contains(err.Error(), "LEAKED") || strings.Contains(err.Error(), "Tr0ub") {
		t.Errorf("the error quotes the password: %v", err)
	}
	if _, err := postgresstore.OpenPool("postgres://alice:Tr0ub%40dor@127.0.0.1:5432/ratelab", time.Second, 1); err != nil {
		t.Errorf("the same password escaped: %v", err)
	}
}
