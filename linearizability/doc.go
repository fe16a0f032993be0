// Package linearizability checks a rate limiter the way databases are
// checked: every process records each hit it passes to its store — the
// key, the instant given to the store, when the call started and
// returned on a clock every process of the host shares, and the decision
// it got — and a checker (github.com/anishathalye/porcupine) asks
// whether some one-at-a-time order of the hits, each placed between its
// call and its return, reproduces every decision a client saw.
//
// The order is judged against a sequential specification written apart
// from package algorithm, whose steps the stores run (spec.go): one short
// function per algorithm, in the words of the chapter on window
// boundaries, that a reader can check by hand. A decision bug in package
// algorithm — one hit too many, a window reset a second late — makes
// histories that no order of the specification explains, which it could
// not if the specification were the code it checks. A history is
// linearizable when the store
// behaved as if its hits had happened one at a time, in an order that
// respects real time; a memory store under a worker pool, or a file
// store without its lock, produces histories no order explains — two
// hits told the same remaining count, each by a process that did not see
// the other's hit.
//
// A process killed in the middle of a hit leaves a call with no return.
// Such a hit may or may not have happened, as Jepsen models it: the
// checker may place it anywhere after its call, including after every
// other hit, where it changes nothing anyone saw. It is never dropped: a
// hit that counted and was never answered must still explain the counts
// the others saw.
//
// Histories are partitioned by rule and key, which porcupine checks one
// at a time: the cost grows with the hits of one key in flight at once,
// not with the length of the history.
package linearizability
