// Package harness reproduces, with real processes, why an in-memory rate
// limiter works on a laptop and never fires on shared hosting.
//
// It serves one limited endpoint — "start a demo", 30 per client per hour,
// keyed on the client's address as the original is — under three execution
// models:
//
//   - Single: one long-lived process serves every request. Its memory sees
//     every hit, so the in-memory store throttles from the 31st.
//   - Pool: K long-lived workers behind a round-robin front, as gunicorn's
//     workers or PHP in a worker mode (FrankenPHP, RoadRunner, Swoole).
//     Each worker's map counts only its share, so K × limit get through.
//     Real servers do not deal in turn, so their shares are uneven; the
//     front does, so that the count is exact. (PHP-FPM is not this model
//     for a PHP array: PHP frees a request's memory when it ends.)
//   - CGI: a real net/http/cgi host starts a fresh process for every
//     request; the key comes from REMOTE_ADDR. Every process starts with an
//     empty map, records count 1 and exits: never a 429.
//
// The file store, shared by every process through flock(2), throttles from
// the 31st in all three.
//
// Every process is the current binary re-executed (Go's helper-process
// idiom): childproc.RunIfChild, called first in TestMain and in the
// ratelab command's main with [Roles], turns it into a child when the
// RATELAB_CHILD variable names one of the roles. Long-lived children print a ready line with their
// address and, when their stdin closes, a result line with what they served;
// a child that does not, or exits non-zero, fails the run with its stderr.
// CGI children answer through the CGI protocol itself, and anything but a
// 200 or a well-formed 429 fails the run.
package harness
