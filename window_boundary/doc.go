// Package windowboundary measures the burst a fixed window lets through at
// its reset, and the algorithms that bound it.
//
// A fixed window of 30 per hour counts hits from a key's first hit for one
// hour, then starts again from zero. Thirty hits in the window's last
// second and thirty more at its reset are all accepted: 59 within one
// second, 60 within one hour. [Edge] is that pattern; [MaxIn] measures the
// most requests accepted in any span of a given length (both ends
// included); [All] gives one of each algorithm as a real store deciding a
// real rule ([Limited]), all taking time as a time.Time parameter:
//
//   - the fixed window (ratelab.FixedWindow): 2 × limit at the edge.
//   - the sliding log (ratelab.SlidingLog): exact — never more than limit
//     in any window-long span — at the price of remembering every accepted
//     request in the window.
//   - the sliding-window counter (ratelab.SlidingCounter, Cloudflare's
//     weighted previous + current window): two counts and a window start.
//     It stops the edge burst, but it is an approximation: [Paced] traffic
//     that knows how it weighs gets close to 2 × limit past it.
//   - GCRA (ratelab.GCRA): a token bucket kept as one timestamp; limit +
//     burst.
//
// Package report's CrossProcessBurst sends the edge through real
// processes and a shared store — the file store, or Redis — each process
// handed its instant instead of sleeping, and the demonstration requires
// it to decide exactly as the in-memory store did in one process. This
// package starts no process: it is the measurement alone.
package windowboundary
