package mysqlstore

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab"
)

// The attacker's finding: the driver printed its own unformatted line to
// standard error ("[mysql] … packets.go:58 … i/o timeout") on every
// connection it gave up. Through a DriverLog each is a warning of the
// store's log, once from each place per ratelab.LogEvery.
func TestDriverLogIsTheStoresLog(t *testing.T) {
	var b bytes.Buffer
	l := NewDriverLog(slog.New(slog.NewTextHandler(&b, nil)))
	t0 := time.Unix(1_800_000_000, 0)
	cause := errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout")
	for i := range 5 {
		l.printAt(t0.Add(time.Duration(i)*time.Second), "packets.go:58 ", cause)
	}
	l.printAt(t0.Add(ratelab.LogEvery), "packets.go:58 ", cause)
	l.printAt(t0, "connection.go:190 ", "closing connection:", cause)
	got := b.String()
	if n := strings.Count(got, "level=WARN"); n != 3 {
		t.Errorf("%d warnings, want 3: the first of packets.go:58, it again after LogEvery with 4 held back, and connection.go:190's\n%s", n, got)
	}
	if !strings.Contains(got, `msg="mysqlstore: driver: packets.go:58 read tcp 127.0.0.1:1->127.0.0.1:2: i/o timeout"`) ||
		!strings.Contains(got, "held_back=4") {
		t.Errorf("the lines do not say what the driver said, and how many were held back:\n%s", got)
	}
}

// The driver's lines are not passed the DSN to mask by, so whatever sits
// where a URL's password goes is masked.
func TestDriverLogMasksPasswords(t *testing.T) {
	var b bytes.Buffer
	l := NewDriverLog(slog.New(slog.NewTextHandler(&b, nil)))
	l.printAt(time.Unix(1_800_000_000, 0), "dsn.go:1 ", "bad dsn mysql://u:S3cret@tcp(h)/db")
	if got := b.String(); strings.Contains(got, "S3cret") || !strings.Contains(got, "mysql://xxxxx@tcp(h)/db") {
		t.Errorf("the password is not masked:\n%s", got)
	}
}
