// Package harness reproduces, with real processes, why an in-memory rate
// limiter works on a laptop and never fires on shared hosting.
//
// One limited endpoint — "start a demo", a limit per client per window,
// keyed on the client's address as the original is — runs under three
// execution models:
//
//   - Single: one long-lived process takes every hit. Its memory sees
//     every hit, so the in-memory store refuses from limit+1.
//   - Pool: K long-lived workers take the hits in turn, as gunicorn's
//     workers or PHP in a worker mode (FrankenPHP, RoadRunner, Swoole).
//     Each worker's map counts only its share, so K × limit get through.
//     (PHP-FPM is not this model for a PHP array: PHP frees a request's
//     memory when it ends.)
//   - CGI: a fresh process for every hit, as CGI and suEXEC start one per
//     request. Every process starts with an empty map, counts 1 and
//     exits: never a refusal.
//
// The file store, shared by every process through flock(2), refuses from
// limit+1 in all three. Expect says so before anything runs; Run sees it.
//
// Every process is the current binary re-executed (Go's helper-process
// idiom): childproc.RunIfChild, called first in TestMain and in the
// ratelab command's main with [Roles], turns it into one of the
// endpoint's processes when the RATELAB_CHILD variable names its role.
// It reads its App from one environment variable, makes its own store
// (OpenStore), prints a ready line, and answers each hit its parent
// sends over its stdin with one line; a child that does not, or exits
// non-zero, fails the run with its stderr. No web server stands between:
// package httphost serves the same models over HTTP, as the demos and
// ratelab serve run them.
//
// Kinds of store other than the lesson's two plug in with Register, as
// database/sql's drivers do, so the lesson imports none of them.
package harness
