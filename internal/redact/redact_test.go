package redact

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestPassword(t *testing.T) {
	for _, tt := range []struct{ conn, want string }{
		{"redis://:S3cret pw@127.0.0.1:16379/0", "S3cret pw"},
		{"redis://user:p%40ss@127.0.0.1:6379", "p%40ss"},
		{"redis://127.0.0.1:6379/0", ""},
		{"postgres://ratelab:ratelab-test@127.0.0.1:5432/ratelab?sslmode=disable", "ratelab-test"},
		{"ratelab:s/e@c:ret@tcp(127.0.0.1:3306)/ratelab", "s/e@c:ret"},
		{"ratelab@tcp(127.0.0.1:3306)/ratelab", ""},
		{"host=127.0.0.1 user=ratelab password='a b' dbname=x", "a b"},
		{"host=127.0.0.1 password=plain dbname=x", "plain"},
	} {
		if got := Password(tt.conn); got != tt.want {
			t.Errorf("Password(%q) = %q, want %q", tt.conn, got, tt.want)
		}
	}
}

func TestErrAndString(t *testing.T) {
	conn := "redis://:S3cret pw@127.0.0.1:16379/0"
	_, perr := url.Parse(conn)
	if perr == nil {
		t.Fatal("url.Parse accepted a password with a space")
	}
	for _, err := range []error{perr, fmt.Errorf("wrapped: %w", perr), errors.New("S3cret%20pw and S3cret+pw")} {
		got := Err(err, conn).Error()
		if strings.Contains(got, "S3cret") || !strings.Contains(got, Mask) {
			t.Errorf("Err(%q) = %q, want the password masked", err, got)
		}
	}
	if got := String(conn); got != "redis://:"+Mask+"@127.0.0.1:16379/0" {
		t.Errorf("String(%q) = %q", conn, got)
	}
	plain := errors.New("dial tcp: connection refused")
	if got := Err(plain, conn); got != plain {
		t.Errorf("Err of an error without the password = %v, want it unchanged", got)
	}
	if Err(nil, conn) != nil {
		t.Error("Err(nil) is not nil")
	}
}
