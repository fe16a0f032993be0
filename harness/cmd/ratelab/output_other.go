//go:build !unix

package main

// outputGone is false where a write to a broken pipe raises no SIGPIPE.
func outputGone() bool { return false }
