package databaselock_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	databaselock "github.com/ratelab/ratelab/database_lock"
	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/internal/claim"
	"github.com/ratelab/ratelab/lab/sqlserver"
)

func TestMain(m *testing.M) {
	childproc.RunIfChild(databaselock.Roles())
	m.Run()
}

// mariaDBSnapshotOn is a MariaDB whose default is innodb_snapshot_isolation
// ON, as from MariaDB 11.6.2 (MDEV-35124): 10.11 takes the option, but
// defaults to OFF.
func mariaDBSnapshotOn(t sqlserver.TB) *sqlserver.Server {
	t.Helper()
	return sqlserver.ForTest(t, sqlserver.StartMariaDB, "--innodb-snapshot-isolation=ON")
}

func TestLessons(t *testing.T) {
	for _, tc := range []struct {
		name, key string
		start     func(sqlserver.TB) *sqlserver.Server
		// readThenWrite are the read-then-write rows' cases and claims.
		readThenWrite map[string]string
	}{
		{"mariadb", "mariadb", sqlserver.MariaDBForTest, mariaDBRows},
		{"mariadb snapshot isolation on by default", "mariadb", mariaDBSnapshotOn, mariaDBRows},
		{"postgres", "postgres", sqlserver.PostgresForTest, map[string]string{
			"PostgreSQL: read, then write: two statements": "1 of 2 hits lost",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.start(t)
			rows, err := databaselock.Lessons(context.Background(), tc.key, srv.DSN)
			require.NoError(t, err)
			var table strings.Builder
			claim.Table(&table, "lesson", rows)
			t.Log("\n" + table.String())
			require.Len(t, rows, 7+len(tc.readThenWrite))
			got := map[string]string{}
			for _, r := range rows {
				assert.True(t, r.Pass(), "%s: got %q, want %q (%s)", r.Case, r.Observed, r.Expected, r.Detail)
				if strings.Contains(r.Case, "read, then write") {
					got[r.Case] = r.Expected
				}
			}
			assert.Equal(t, tc.readThenWrite, got)
			assert.True(t, claim.All(rows))
		})
	}
}

// mariaDBRows are the read-then-write rows on a MariaDB that has
// innodb_snapshot_isolation (10.6.18, 10.11.8, 11.4.2 and later), whatever
// its default: lost with the setting off, refused and retried with it on.
var mariaDBRows = map[string]string{
	"MariaDB: read, then write, innodb_snapshot_isolation=OFF": "1 of 2 hits lost",
	"MariaDB: read, then write, innodb_snapshot_isolation=ON":  "ERROR 1020 for A, retried: 0 of 2 lost",
}
