//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

// Package bench measures the file store; it needs flock(2) semantics.
package bench

import (
	"errors"
	"io"
	"time"

	"github.com/ratelab/ratelab/internal/childproc"
)

type Options struct {
	Rounds, PerRound, HitsEach, Repeats int
	Procs                               []int
	Progress                            io.Writer
	Timestamp                           time.Time
}

func Default(string) Options { return Options{} }

type Result struct{}

func Run(Options) (Result, error) {
	return Result{}, errors.New("bench: needs flock(2) semantics (Linux, macOS or a BSD)")
}

func (Result) Markdown(io.Writer) {}

func (Result) WriteTargets(io.Writer) {}

// Roles: none where the benchmark cannot run.
func Roles() childproc.Roles { return nil }
