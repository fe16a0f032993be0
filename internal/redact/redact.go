// Package redact keeps passwords out of errors and log lines. A connection
// string — a redis:// or postgres:// URL, a go-sql-driver/mysql DSN, a
// key=value PostgreSQL string — carries its password inline, and the
// parsers that reject one quote it back whole. Every store passes such
// errors through Err, and every message that names a server shows String
// of its address.
package redact

import (
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Mask is what a password is replaced with.
const Mask = "xxxxx"

// String returns conn with its password, if any, replaced by Mask.
func String(conn string) string {
	pws := passwords(conn)
	for _, pw := range pws {
		conn = replace(conn, pw)
	}
	return pieces(conn, pws)
}

// Err returns err with every form of conn's password in its message
// replaced by Mask; err itself if conn holds no password or err does not
// quote it. The error returned does not wrap err, which still holds the
// password.
func Err(err error, conn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	out := msg
	pws := passwords(conn)
	for _, pw := range pws {
		out = replace(out, pw)
	}
	out = pieces(out, pws)
	if slices.ContainsFunc(pws, awkward) {
		out = withhold(out)
	}
	if out != msg {
		return errors.New(out)
	}
	return err
}

// passwords returns every password conn may carry: Password's, a lone
// user's (loneUser) and, for a URL with a query, that of the URL without
// it and those of its parameters — an addr= node's user:password@ (a cluster's other nodes),
// a password= or sentinel_password= value.
func passwords(conn string) []string {
	pws := []string{Password(conn), loneUser(conn)}
	if m := keyValueRest.FindStringSubmatch(conn); m != nil && !strings.Contains(conn, "://") {
		pws = append(pws, m[1]) // and all up to the next key=, where a parser may have cut it short
	}
	base, query, ok := strings.Cut(conn, "?")
	if !ok || !strings.Contains(base, "://") {
		return pws
	}
	pws = append(pws, Password(base))
	q, _ := url.ParseQuery(query) // what parses, leniently
	for _, addr := range q["addr"] {
		pws = append(pws, Password("redis://"+addr))
	}
	pws = append(append(pws, q["password"]...), q["sentinel_password"]...)
	for _, m := range queryPassword.FindAllStringSubmatch(query, -1) { // and what does not: a bad escape, a ';'
		pws = append(pws, m[1])
	}
	return pws
}

// keyValueRest finds a key=value string's password= and everything after
// it up to the next key=: a quote or a space inside the password cuts it
// short for libpq's rules, and a parser's message prints the rest.
var keyValueRest = regexp.MustCompile(`(?is)(?:^|\s)password\s*=\s*(.*?)(?:\s+\w+\s*=|$)`)

// queryPassword finds a password= or sentinel_password= parameter as
// written, which url.ParseQuery drops when it cannot read it.
var queryPassword = regexp.MustCompile(`(?i)(?:^|[&;])(?:sentinel_)?password=([^&]*)`)

// piece matches a run of text between separators: a parser that masks a
// password itself may stop at a space or a quote (pgx prints
// "password=xxxxx Wk7" of password=Zq9\\ Wk7), leaving a piece behind.
var piece = regexp.MustCompile("[^\\s\"'`\\\\:,;#?/@&=+]+")

// pieces replaces every piece of s that is a piece of one of pws with Mask.
func pieces(s string, pws []string) string {
	of := map[string]bool{}
	for _, pw := range pws {
		for _, p := range piece.FindAllString(pw, -1) {
			of[p] = true
		}
	}
	return piece.ReplaceAllStringFunc(s, func(p string) string {
		if of[p] {
			return Mask
		}
		return p
	})
}

// awkward reports whether pw holds a character a URL must escape. A
// parser that stops at one quotes the piece before it ("invalid port
// \":Zq9\" after host" of a password Zq9?Wk7), which no form of the
// whole password matches.
func awkward(pw string) bool { return url.QueryEscape(pw) != pw }

// quoted matches a double-quoted string in Go's quoting, or a backquoted
// one: what parsers put around the text they refuse.
var quoted = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`")

// withhold replaces each quoted text in s that Mask did not replace a
// password in with "…", and says so.
func withhold(s string) string {
	n := 0
	s = quoted.ReplaceAllStringFunc(s, func(q string) string {
		if strings.Contains(q, Mask) {
			return q
		}
		n++
		return `"…"`
	})
	if n > 0 {
		s += " (quoted text withheld: it may hold a part of the password)"
	}
	return s
}

// keyValue finds a key=value string's password: quoted, or unquoted up to
// the first space that no backslash escapes (libpq reads "s3cret\ pw" as
// one value).
var keyValue = regexp.MustCompile(`(?i)(?:^|\s)password\s*=\s*('(?:[^'\\]|\\.)*'|(?:[^\s\\]|\\.)*)`)

// Password returns the password conn carries: the one of a URL's or a
// DSN's user:password@, or a key=value string's password=. It reads conn
// leniently, as a string a parser may have refused: a password with a
// space or a slash in it is found all the same.
func Password(conn string) string {
	if m := keyValue.FindStringSubmatch(conn); m != nil && !strings.Contains(conn, "://") {
		return strings.Trim(m[1], "'")
	}
	rest := conn
	if _, after, ok := strings.Cut(conn, "://"); ok {
		rest = after
		if u, err := url.Parse(conn); err == nil && !hasPassword(u) {
			// It parses without a password: an '@' is the query's (an
			// addr= node's), unless one comes before the query — a
			// password holding a '/', which ended the host early and
			// put the rest in the path.
			rest, _, _ = strings.Cut(rest, "?")
			rest, _, _ = strings.Cut(rest, "#")
			if !strings.Contains(rest, "@") {
				return ""
			}
		}
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return ""
	}
	_, pw, ok := strings.Cut(rest[:at], ":")
	if !ok {
		return ""
	}
	return pw
}

// hasPassword reports whether u's user information holds a password.
func hasPassword(u *url.URL) bool {
	_, ok := u.User.Password()
	return ok
}

// unescaped is a key=value string's value as libpq reads it: every
// backslash-escaped character as itself.
var unescaped = strings.NewReplacer(`\\`, `\`, `\ `, " ", `\'`, "'")

// replace masks pw in s where a connection string holds it — after the
// user and before the '@' of a URL or DSN, after password= — as written,
// URL-escaped and URL-unescaped. Only there: a short password would
// otherwise mask every letter it shares with the rest of the message.
func replace(s, pw string) string {
	if pw == "" {
		return s
	}
	q := strconv.Quote(pw) // as %q prints it: a '"' or a control character escaped
	forms := []string{pw, url.QueryEscape(pw), url.PathEscape(pw), unescaped.Replace(pw), q[1 : len(q)-1]}
	if u, err := url.PathUnescape(pw); err == nil {
		forms = append(forms, u)
	}
	for _, f := range forms {
		if f == "" {
			continue
		}
		s = strings.ReplaceAll(s, ":"+f+"@", ":"+Mask+"@")
		s = strings.ReplaceAll(s, "//"+f+"@", "//"+Mask+"@") // a lone user's place
		kv, err := regexp.Compile(`(?i)(password\s*=\s*'?)` + regexp.QuoteMeta(f))
		if err != nil { // f is not UTF-8, which no pattern can hold: mask it everywhere
			s = strings.ReplaceAll(s, f, Mask)
			continue
		}
		s = kv.ReplaceAllString(s, "${1}"+Mask)
	}
	return s
}

// loneUser returns the user of a go-redis URL conn (redis://, rediss://,
// unix://) that has a user and no password, "" if it has none: go-redis
// sends no password then, and a password written where the user goes,
// redis://s3cret@host, is an easy slip, masked as a password is. conn is
// read leniently, as a URL a parser may have refused.
func loneUser(conn string) string {
	scheme, rest, ok := strings.Cut(conn, "://")
	if !ok || !slices.ContainsFunc([]string{"redis", "rediss", "unix"}, func(s string) bool { return strings.EqualFold(s, scheme) }) {
		return ""
	}
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 || strings.Contains(rest[:at], ":") {
		return ""
	}
	return rest[:at]
}

// Line returns s, a line that quotes connection strings nobody passed to
// it (a driver's own log line), with every URL's user information and
// every password= value replaced by Mask: without the connection string,
// what sits where a password goes is masked, whatever it is.
func Line(s string) string {
	s = userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
	return passwordValue.ReplaceAllString(s, "${1}"+Mask)
}

// userinfo finds a URL's scheme and user information: "redis://u:pw@" or
// "redis://pw@".
var userinfo = regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://)[^/?#\s@]*@`)

// passwordValue finds a password= or sentinel_password= value, quoted or
// up to the next space, '&' or ';'.
var passwordValue = regexp.MustCompile(`(?i)((?:^|[\s&;?])(?:sentinel_)?password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&;]*)`)
