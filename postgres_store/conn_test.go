package postgresstore

import "testing"

// The finding: every CGI process asked a server on loopback for TLS first
// (pgx's sslmode=prefer) and, refused, connected again in plain text —
// twice the connections, and under load most hits past their timeout.
// A server on this machine is reached in plain text unless sslmode is set.
func TestNoTLSAttemptOnThisMachine(t *testing.T) {
	for _, tt := range []struct {
		url     string
		tryTLS  bool
		targets int // connection attempts per connect
	}{
		{"postgres://u:p@127.0.0.1:5432/db", false, 1},
		{"postgres://u:p@localhost:5432/db", false, 1},
		{"postgres://u:p@[::1]:5432/db", false, 1},
		{"host=/var/run/postgresql user=u dbname=db", false, 1},
		{"postgres://u:p@127.0.0.1:5432/db?sslmode=prefer", true, 2},
		{"postgres://u:p@db.example:5432/db", true, 2},
		{"host=127.0.0.1,db.example user=u", true, 4},
	} {
		pool, err := OpenPool(tt.url, 0, 0)
		if err != nil {
			t.Fatalf("OpenPool(%q): %v", tt.url, err)
		}
		cfg := pool.Config().ConnConfig
		if got := cfg.TLSConfig != nil; got != tt.tryTLS {
			t.Errorf("%s: tries TLS first = %v, want %v", tt.url, got, tt.tryTLS)
		}
		if got := 1 + len(cfg.Fallbacks); got != tt.targets {
			t.Errorf("%s: %d attempts per connect, want %d", tt.url, got, tt.targets)
		}
		pool.Close()
	}
	t.Setenv("PGSSLMODE", "prefer") // the environment chooses too
	pool, err := OpenPool("postgres://u:p@127.0.0.1:5432/db", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if pool.Config().ConnConfig.TLSConfig == nil {
		t.Error("PGSSLMODE=prefer: no TLS attempt, want the one it asks for")
	}
}
