// Package windowboundary measures the burst a fixed window lets through at
// its reset, and the algorithms that bound it.
//
// A fixed window of 30 per hour counts hits from a key's first hit for one
// hour, then starts again from zero. Thirty hits in the window's last
// second and thirty more at its reset are all accepted: 59 within one
// second, 60 within one hour. [Edge] is that pattern; [MaxIn] measures the
// most requests accepted in any span of a given length (both ends
// included); [All] gives one of each algorithm, all taking time as a
// time.Time parameter:
//
//   - [Fixed]: this repository's store, 2 × limit at the edge.
//   - [SlidingLog]: exact — never more than limit in any window-long span —
//     at the price of remembering every accepted request in the window.
//   - [Counter]: the sliding-window counter (Cloudflare's weighted
//     previous + current window); two counts and a window start. It stops
//     the edge burst, but it is an approximation: [Paced] traffic that
//     knows how it weighs gets close to 2 × limit past it.
//   - [GCRA]: a token bucket kept as one timestamp; limit + burst.
//
// [CrossProcessBurst] shows the edge burst with real processes and the real
// file store, each process handed its instant instead of sleeping.
package windowboundary
