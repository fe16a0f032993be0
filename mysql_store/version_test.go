package mysqlstore

import "testing"

// A locked hit takes two round trips on MariaDB from 10.5, which has
// INSERT … RETURNING, and MySQL's five elsewhere.
func TestReturningServer(t *testing.T) {
	two := []string{"10.11.19-MariaDB-0+deb12u1", "10.5.0-MariaDB", "11.4.2-MariaDB-log",
		"5.5.5-10.6.1-MariaDB"} // the last with the old replication prefix
	five := []string{"10.4.32-MariaDB", "8.0.36", "8.4.0-commercial", ""}
	for _, v := range two {
		if !returningServer(v) {
			t.Errorf("returningServer(%q) = false, want true", v)
		}
	}
	for _, v := range five {
		if returningServer(v) {
			t.Errorf("returningServer(%q) = true, want false", v)
		}
	}
}
