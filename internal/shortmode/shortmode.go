// Package shortmode tells a test helper that starts a private server —
// Redis, MariaDB, PostgreSQL, lighttpd — whether the tests run with
// -short, the edit loop's mode, in which such tests skip, without linking
// package testing into the programs that start the same servers.
package shortmode

import "flag"

// On reports whether the test binary runs with -short; false in a program
// that is not a test, and before the test flags are parsed.
func On() bool {
	f := flag.Lookup("test.short")
	return f != nil && f.Value.String() == "true"
}

// Why is what a test that needs a private server of kind says when it
// skips under -short.
func Why(kind string) string { return "starts a private " + kind + "; skipped with -short" }
