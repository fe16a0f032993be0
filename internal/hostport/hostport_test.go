package hostport

import (
	"strings"
	"testing"
)

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
		{"S3cretPW@127.0.0.1:2", false},
	} {
		if err := Check(tt.addr); (err == nil) != tt.ok || err != nil && strings.Contains(err.Error(), "S3cret") {
			t.Errorf("Check(%q) = %v, want ok=%v, and no part before an '@' quoted", tt.addr, err, tt.ok)
		}
	}
}
