package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// stopSignals are those that stop serve and the checks as cleanly as
// Ctrl-C does — SIGHUP is the terminal closing — and SIGPIPE, which does
// so only when standard output or error has lost its reader (see
// stopContext).
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE}

// stopContext returns a context that ends when one of stopSignals asks
// serve or a check to stop. A SIGPIPE asks it only when stdout or stderr
// is a pipe whose reader has gone (serve … | head), whose default would
// kill the process before it removed what it made: every write to a
// socket whose client has gone raises a SIGPIPE too, once a program
// listens for it, and a client that closed its connection while serve
// wrote the answers to its pipelined requests stopped the server (the
// attacker's finding at 5879fdb). Its stop releases the signals.
func stopContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, stopSignals...)
	go func() {
		for {
			select {
			case s := <-sigs:
				if s != syscall.SIGPIPE || outputGone() {
					cancel()
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel()
	}
}
