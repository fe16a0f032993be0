//go:build !unix

// Package procstop stops processes with SIGSTOP; where there is none, it
// says so.
package procstop

import "errors"

var errNoStop = errors.New("procstop: stopping a process needs SIGSTOP")

// Stop is not supported where there is no SIGSTOP.
func Stop([]int) (resume func() error, err error) { return nil, errNoStop }

// Family is not supported where there is no /proc.
func Family(int) ([]int, error) { return nil, errNoStop }
