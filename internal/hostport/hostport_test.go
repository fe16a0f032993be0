package hostport

import "testing"

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:6379", true},
		{"[::1]:5432", true},
		{"db.example:3306", true},
		{"127.0.0.1:99999", false},
		{"127.0.0.1:0", false},
		{"127.0.0.1:http", false},
		{"127.0.0.1", false},
		{":6379", false},
	} {
		if err := Check(tt.addr); (err == nil) != tt.ok {
			t.Errorf("Check(%q) = %v, want ok=%v", tt.addr, err, tt.ok)
		}
	}
}
