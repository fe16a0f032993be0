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
		{`host=127.0.0.1 password=s3cret\ PgPW dbname=x`, `s3cret\ PgPW`}, // the attacker's finding: libpq's escaped space
	} {
		if got := Password(tt.conn); got != tt.want {
			t.Errorf("Password(%q) = %q, want %q", tt.conn, got, tt.want)
		}
	}
}

func TestErrAndString(t *testing.T) {
	conn := fmt.Sprintf("redis://:%s@127.0.0.1:16379/0", "S3cret pw") // which url.Parse refuses
	_, perr := url.Parse(conn)
	if perr == nil {
		t.Fatal("url.Parse accepted a password with a space")
	}
	for _, err := range []error{perr, fmt.Errorf("wrapped: %w", perr), errors.New("redis://:S3cret%20pw@x and redis://:S3cret+pw@y")} {
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
	short := errors.New("cannot parse `postgres://u:p@127.0.0.1:99999/db`: invalid port")
	if got := Err(short, "postgres://u:p@127.0.0.1:99999/db").Error(); got != "cannot parse `postgres://u:xxxxx@127.0.0.1:99999/db`: invalid port" {
		t.Errorf("a one-letter password masked %q", got)
	}
	spaced := errors.New("cannot parse `host=h password = SeKrIt dbname=x`: invalid port")
	if got := Err(spaced, "host=h password = SeKrIt dbname=x").Error(); strings.Contains(got, "SeKrIt") {
		t.Errorf("password with spaces around = left in %q", got)
	}
	tab := errors.New("cannot parse `host=h password\t=SeKrIt`")
	if got := Err(tab, "host=h password\t=SeKrIt").Error(); strings.Contains(got, "SeKrIt") {
		t.Errorf("password after a tab left in %q", got)
	}
	kv := errors.New("bad: host=h password='a b' x")
	if got := Err(kv, "host=h password='a b'").Error(); strings.Contains(got, "a b") {
		t.Errorf("key=value password left in %q", got)
	}
	// A cluster URL's other nodes, and a failover URL's parameters, can
	// carry passwords too (the attacker's finding: go-redis quoted an addr
	// parameter's back whole).
	for _, tt := range []struct{ conn, msg string }{
		{"redis://127.0.0.1:26411/0?addr=u:s3cret@127.0.0.1:1", "redis: unable to parse addr param: u:s3cret@127.0.0.1:1"},
		{"redis://:m41n@127.0.0.1:1/0?addr=u:s3cret@127.0.0.1:2&addr=127.0.0.1:3", "bad redis://:m41n@127.0.0.1:1 and u:s3cret@127.0.0.1:2"},
		{"redis://127.0.0.1:26379/0?master_name=m&sentinel_password=s3cret", "bad ?master_name=m&sentinel_password=s3cret"},
	} {
		for _, got := range []string{Err(errors.New(tt.msg), tt.conn).Error(), String(tt.conn)} {
			if strings.Contains(got, "s3cret") || strings.Contains(got, "m41n") || !strings.Contains(got, Mask) {
				t.Errorf("%q: got %q, want every password masked", tt.conn, got)
			}
		}
	}
	if Err(nil, conn) != nil {
		t.Error("Err(nil) is not nil")
	}
}

// A libpq password with a backslash-escaped space is masked whole, as
// written and as libpq reads it (the finding: "xxxxx PgPW" was printed).
func TestEscapedSpaceIsMaskedWhole(t *testing.T) {
	conn := `host=127.0.0.1 user=app password=s3cret\ PgPW dbname=app`
	if got, want := String(conn), "host=127.0.0.1 user=app password=xxxxx dbname=app"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	err := Err(errors.New(`cannot parse password=s3cret PgPW: bad`), conn)
	if strings.Contains(err.Error(), "PgPW") {
		t.Errorf("Err = %q: the password shows", err)
	}
}

// A password that is not UTF-8 cannot be put in a pattern: it is masked
// wherever it shows, without a panic (whose trace would print it).
func TestAPasswordNotUTF8IsMasked(t *testing.T) {
	conn := "postgres://u:Wrong\xe9PW@127.0.0.1:99999/db"
	err := Err(errors.New("cannot parse `"+conn+"`: invalid port; password=Wrong\xe9PW"), conn)
	if got := err.Error(); strings.Contains(got, "Wrong") || !strings.Contains(got, Mask) {
		t.Errorf("Err = %q, want the password masked", got)
	}
}

// The attacker's findings: url.Parse quotes a piece of the URL it refuses
// — the part of the password before a '?' or '#' ("invalid port \":Zq9\"
// after host"), or the whole URL in Go's quoting, where a '"' or a
// control character is escaped and no longer matches the password as
// written — and a key=value string's PASSWORD in capitals was not found.
// No part of the password may remain.
func TestParserMessagesKeepNoPieceOfThePassword(t *testing.T) {
	for _, pw := range []string{"Zq9/Wk7", "Zq9?Wk7", "Zq9#Wk7", `Zq9"Wk7`, "Zq9\x01Wk7", "Zq9 Wk7", "Zq9%zzWk7"} {
		conn := "redis://:" + pw + "@127.0.0.1:1/0"
		_, perr := url.Parse(conn)
		if perr == nil {
			perr = fmt.Errorf("dial %s: refused", conn) // a URL that parses, quoted back whole
		}
		got := Err(fmt.Errorf("redisstore: %w", perr), conn).Error()
		if strings.Contains(got, "Zq9") || strings.Contains(got, "Wk7") {
			t.Errorf("password %q: Err = %q, a piece of it shows", pw, got)
		}
		if !strings.HasPrefix(got, "redisstore: ") {
			t.Errorf("password %q: Err = %q, want the caller's prefix kept", pw, got)
		}
	}
	conn := "host=127.0.0.1 PASSWORD=Zq9Wk7 sslmode=bogus"
	if got := Err(errors.New("cannot parse `"+conn+"`: sslmode is invalid"), conn).Error(); strings.Contains(got, "Zq9") {
		t.Errorf("Err = %q, the capitalised PASSWORD shows", got)
	}
	if got := String(conn); strings.Contains(got, "Zq9") {
		t.Errorf("String = %q, the capitalised PASSWORD shows", got)
	}
}

// The attacker's findings at 7ccef37. pgx masks a key=value string's
// password itself, up to the first space: of "password= Zq9Wk7" it masks
// nothing but the gap, of "password=Zq9\ Wk7" the first half. Its Mask
// is ours, so no quoted text was withheld, and the rest was printed.
func TestPgxsOwnMaskLeavesNoPiece(t *testing.T) {
	for _, tt := range []struct{ conn, msg string }{
		{`host=h password= Zq9Wk7 sslmode=bogus`, "cannot parse `host=h password=xxxxx Zq9Wk7 sslmode=bogus`: failed to configure TLS (sslmode is invalid)"},
		{`host=h password=Zq9\ Wk7 sslmode=bogus`, "cannot parse `host=h password=xxxxx Wk7 sslmode=bogus`: failed to configure TLS (sslmode is invalid)"},
		{`host=h password= 'Zq9 Wk7' sslmode=bogus`, "cannot parse `host=h password=xxxxx 'Zq9 Wk7' sslmode=bogus`: bad"},
	} {
		got := Err(errors.New(tt.msg), tt.conn).Error()
		if strings.Contains(got, "Zq9") || strings.Contains(got, "Wk7") {
			t.Errorf("%q: Err = %q, a piece of the password shows", tt.conn, got)
		}
		if !strings.Contains(got, "sslmode") && !strings.Contains(got, "bad") {
			t.Errorf("%q: Err = %q, the reason is gone", tt.conn, got)
		}
	}
}

// A Redis URL's password= or sentinel_password= that url.ParseQuery drops
// — an escape it cannot read, a ';' — was not known to be a password, and
// the URL was printed whole.
func TestAQueryPasswordTheParserDropsIsMasked(t *testing.T) {
	for _, conn := range []string{
		"redis://127.0.0.1:1/0?password=Zq9%zzWk7",
		"redis://127.0.0.1:1/0?password=Zq9;Wk7&pool_size=2",
		"redis://127.0.0.1:26379/0?master_name=m&sentinel_password=Zq9%zzWk7",
	} {
		for _, got := range []string{String(conn), Err(errors.New("redis unreachable at "+conn), conn).Error()} {
			if strings.Contains(got, "Zq9") || strings.Contains(got, "Wk7") {
				t.Errorf("%q: got %q, a piece of the password shows", conn, got)
			}
		}
	}
}

// The attacker's findings at 0574388: a key=value password with a quote
// or a space in it was cut where the parser would cut it, and the parser's
// message printed the rest; a URL password with a ';' and a '#' left the
// piece between them in a quoted text that held the mask.
func TestAPasswordCutShortLeavesNoPiece(t *testing.T) {
	for _, tt := range []struct{ conn, msg string }{
		{`host=127.0.0.1 port=1 password='Qj'Zk'Vw' dbname=d`, "cannot parse `host=127.0.0.1 port=1 password=xxxxx dbname=d`: failed to parse as keyword/value (missing \"=\" after \"Zk'Vw'\" in connection info string\")"},
		{`password="Qj Zk Vw" host=1`, "cannot parse `password=xxxxx Zk Vw\" host=1`: bad"},
		{`host=127.0.0.1 port=1 password=Qj Zk Vw`, "cannot parse `host=127.0.0.1 port=1 password=xxxxx Zk Vw`: bad"},
		{`host=127.0.0.1 password=Qj Zk#Vw`, "cannot parse `host=127.0.0.1 password=xxxxx Zk#Vw`: bad"},
		{`host=127.0.0.1 password='Qj' 'ZkVw'`, "cannot parse `host=127.0.0.1 password=xxxxx 'ZkVw'`: bad"},
		{"redis://u:Qj;Zk#Vw@127.0.0.1:1/0", `parse "redis://u:Qj;Zk": invalid port ":Qj;Zk" after host`},
		{"redis://u:Qj;Zk?Vw@127.0.0.1:1/0", `parse "redis://u:Qj;Zk": invalid port ":Qj;Zk" after host`},
		{"redis://u:Qj;Zk/Vw@127.0.0.1:1/0", `parse "redis://u:Qj;Zk": invalid port ":Qj;Zk" after host`},
		{"redis://u:Qj Zk#Vw@127.0.0.1:1/0", `parse "redis://u:Qj Zk": invalid character " " in host name`},
	} {
		got := Err(errors.New(tt.msg), tt.conn).Error()
		for _, piece := range []string{"Qj", "Zk", "Vw"} {
			if strings.Contains(got, piece) {
				t.Errorf("%q: Err = %q, %q shows", tt.conn, got, piece)
			}
		}
	}
}

// A redis:// URL with a user and no password: the user may be a password
// written in the wrong place, and is masked where a URL holds it; a URL
// with a password keeps its user, and another scheme's lone user stays
// (the attacker's finding: serve printed redis://S3cretPW@host whole).
func TestALoneRedisUserIsMasked(t *testing.T) {
	for _, tt := range []struct{ conn, msg, want string }{
		{"redis://S3cretPW@127.0.0.1:16391/0", "-redis redis://S3cretPW@127.0.0.1:16391/0: NOAUTH",
			"-redis redis://" + Mask + "@127.0.0.1:16391/0: NOAUTH"},
		{"rediss://S3cret%2FPW@127.0.0.1:1/0", "dial rediss://S3cret%2FPW@127.0.0.1:1/0 and rediss://S3cret/PW@127.0.0.1:1",
			"dial rediss://" + Mask + "@127.0.0.1:1/0 and rediss://" + Mask + "@127.0.0.1:1"},
		{"redis://alice:pw1@127.0.0.1:1/0", "bad redis://alice:pw1@127.0.0.1:1/0", "bad redis://alice:" + Mask + "@127.0.0.1:1/0"},
		{"unix://S3cretPW@/run/redis.sock", "redis at unix://S3cretPW@/run/redis.sock is unreachable",
			"redis at unix://" + Mask + "@/run/redis.sock is unreachable"},
		{"postgres://alice@127.0.0.1/db", "bad postgres://alice@127.0.0.1/db", "bad postgres://alice@127.0.0.1/db"},
	} {
		if got := Err(errors.New(tt.msg), tt.conn).Error(); got != tt.want {
			t.Errorf("Err(%q, %q) = %q, want %q", tt.msg, tt.conn, got, tt.want)
		}
	}
	if got, want := String("redis://S3cretPW@127.0.0.1:16391/0"), "redis://"+Mask+"@127.0.0.1:16391/0"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

func TestLineMasksWhatSitsWhereAPasswordGoes(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"redis: dial redis://u:S3cret@10.0.0.1:6379 failed", "redis: dial redis://xxxxx@10.0.0.1:6379 failed"},
		{"sentinel rediss://S3cret@h:26379/0 is down", "sentinel rediss://xxxxx@h:26379/0 is down"},
		{"connect host=h password='S3 cret' dbname=x", "connect host=h password=xxxxx dbname=x"},
		{"redis://h:6379/0?password=S3cret&db=1", "redis://h:6379/0?password=xxxxx&db=1"},
		{"dial tcp 127.0.0.1:6379: connection refused", "dial tcp 127.0.0.1:6379: connection refused"},
		{"user@example.com wrote", "user@example.com wrote"},
	} {
		if got := Line(tc.in); got != tc.want {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The attacker's finding at 5879fdb: a password holding a '/' ends a
// URL's host early, so the URL parses without a password, and the parsers'
// messages quoted it ("invalid URL path: /s3cretQ@127.0.0.1:19030/0").
func TestAPasswordHoldingASlashIsMasked(t *testing.T) {
	for _, conn := range []string{
		"redis://:/s3cretQ@127.0.0.1:19030/0",
		"redis://u:1234/s3cretA@127.0.0.1:6379/0",
		"redis://default:/s3cretR@h:6379/0?dial_timeout=1s",
		"postgres://u:/s3cretT@127.0.0.1:19023/db",
	} {
		_, rest, _ := strings.Cut(conn, "://")
		msg := fmt.Errorf("redis: invalid URL path: /%s; failed to connect to `user=root database=%s`", rest[strings.Index(rest, "/")+1:], rest[strings.Index(rest, "/")+1:])
		if got := Err(msg, conn).Error(); strings.Contains(got, "s3cret") {
			t.Errorf("Err(%q) = %q, which holds a piece of the password", conn, got)
		}
		if got := String(conn); strings.Contains(got, "s3cret") {
			t.Errorf("String(%q) = %q", conn, got)
		}
	}
	if got := Password("redis://h:6379/0?addr=u:p@h2:6379"); got != "" {
		t.Errorf("Password of a URL whose only '@' is in its query = %q, want none", got)
	}
}
