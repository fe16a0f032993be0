package databaselock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	databaselock "github.com/ratelab/ratelab/database_lock"
	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/internal/claim"
	"github.com/ratelab/ratelab/internal/lab/sqlserver"
)

func TestMain(m *testing.M) {
	childproc.RunIfChild(databaselock.Roles())
	m.Run()
}

func TestLessons(t *testing.T) {
	for _, tc := range []struct {
		key   string
		start func(sqlserver.TB) *sqlserver.Server
	}{
		{"mariadb", sqlserver.MariaDBForTest},
		{"postgres", sqlserver.PostgresForTest},
	} {
		t.Run(tc.key, func(t *testing.T) {
			srv := tc.start(t)
			rows, err := databaselock.Lessons(context.Background(), tc.key, srv.DSN)
			require.NoError(t, err)
			require.Len(t, rows, 8)
			for _, r := range rows {
				assert.True(t, r.Pass(), "%s: got %q, want %q (%s)", r.Case, r.Observed, r.Expected, r.Detail)
			}
			assert.True(t, claim.All(rows))
		})
	}
}
