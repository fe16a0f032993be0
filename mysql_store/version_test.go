package mysqlstore

import "testing"

// A locked hit takes two round trips on MariaDB from 10.5, which has
// INSERT … RETURNING, and MySQL's five elsewhere.
func TestReturningServer(t *testing.T) {
	for _, tt := range []struct {
		version string
		want    bool
	}{
		{"10.11.19-MariaDB-0+deb12u1", true},
		{"10.5.0-MariaDB", true},
		{"11.4.2-MariaDB-log", true},
		{"5.5.5-10.6.1-MariaDB", true}, // the old replication prefix
		{"10.4.32-MariaDB", false},
		{"8.0.36", false},
		{"8.4.0-commercial", false},
		{"", false},
	} {
		if got := returningServer(tt.version); got != tt.want {
			t.Errorf("returningServer(%q) = %v, want %v", tt.version, got, tt.want)
		}
	}
}
