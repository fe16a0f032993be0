package logevery

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestAt(t *testing.T) {
	var out bytes.Buffer
	l := New(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{ReplaceAttr: noTime})), 10*time.Second)
	t0 := time.Unix(1_780_000_000, 0)
	for _, s := range []int{0, 1, 9, 10, 11, 25, 3} { // seconds after t0; 3 is a clock set back
		l.KeyAt(t0.Add(time.Duration(s)*time.Second), "a", slog.LevelWarn, fmt.Sprint("a at ", s))
	}
	l.At(t0.Add(time.Second), slog.LevelError, "b at 1")
	want := []string{
		`level=WARN msg="a at 0"`,
		`level=WARN msg="a at 10" held_back=2`,
		`level=WARN msg="a at 25" held_back=1`,
		`level=WARN msg="a at 3"`,
		`level=ERROR msg="b at 1"`,
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Past maxKeys keys, all are forgotten: memory stays bounded, and each
// key is written again.
func TestKeysAreBounded(t *testing.T) {
	var out bytes.Buffer
	l := New(slog.New(slog.NewTextHandler(&out, nil)), time.Hour)
	now := time.Unix(1_780_000_000, 0)
	for i := range maxKeys + 1 {
		l.KeyAt(now, fmt.Sprint(i), slog.LevelInfo, "m")
	}
	if len(l.last) != 1 || len(l.held) != 1 {
		t.Errorf("after %d keys: %d and %d remembered, want 1", maxKeys+1, len(l.last), len(l.held))
	}
	l.KeyAt(now, "0", slog.LevelInfo, "m")
	if got := strings.Count(out.String(), "\n"); got != maxKeys+2 {
		t.Errorf("%d lines, want %d: key 0, forgotten, is written again", got, maxKeys+2)
	}
}

func noTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
