// Package httphost serves the execution models of package harness over
// HTTP, as the demos, ratelab serve and the workshop's curl see them.
//
//   - Single: one long-lived process serves every request.
//   - Pool: K long-lived workers behind a round-robin front. Real servers
//     do not deal in turn, so their shares are uneven; the front does, so
//     that the count is exact.
//   - CGI: a real net/http/cgi host starts a fresh process for every
//     request; the key comes from REMOTE_ADDR.
//   - TwoHosts: two pools, each with a state directory of its own: two
//     machines behind one load balancer.
//
// A Host is a front on a loopback address and the processes behind it,
// each the current binary re-executed ([Roles]). Long-lived workers print
// a ready line with their address and, when their stdin closes, a result
// line with what they served; a child that does not, or exits non-zero,
// fails the run with its stderr. CGI children answer through the CGI
// protocol itself, and anything but a 200 or a well-formed 429 fails the
// run. The front is what a server exposed to clients needs: timeouts,
// caps on connections, bodies and CGI programs, and for a store on a
// server the breaker's watcher (package breaker). Run and Demo print the
// demos' rows against harness.Expect.
package httphost
