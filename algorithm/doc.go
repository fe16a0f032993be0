// Package algorithm holds the four rate-limiting steps of ratelab — the
// fixed window, the sliding-window counter, the sliding log and GCRA — each
// a pure function from (state, rule, instant) to (state, decision), with
// the state's byte encoding. It is what a store author needs: a store finds
// the bytes of (rule, key), calls [Take] under whatever makes the step
// atomic (a mutex, flock(2), a transaction), and writes back what it
// returns. The memory and file stores do exactly that, so their decisions
// cannot drift apart; the Redis store runs the same steps as Lua scripts,
// and a shared table of instants holds all three to identical decisions.
//
// # Time never runs backwards inside a state
//
// A hit stamped earlier than the state it lands in (its clock was read
// before a lock wait, or on a host whose clock is behind) is counted as if
// it came at the state's own latest instant: it never resets, wipes or
// shortens a window. Each step below says how.
//
// # No state lies further ahead than a rule writes
//
// A state's instants never lie further ahead of a hit than a rule's step
// puts them, on a host whose clock runs up to [ratelab.MaxSkew] ahead of
// the hit's. [Take] replaces a state that records a later one, as it
// replaces one it cannot decode: no rule wrote it, and taking it as it is
// would refuse the client, or fail every hit, until that instant, centuries
// away for all the decoders know. Each bound follows from its step, for any
// rule of the state's window (its limit may have changed since):
//
//   - fixed: reset_at ≤ now + MaxWindow + MaxSkew. A new window ends one
//     window after its hit, and no window is longer than MaxWindow. One
//     that ends beyond the hit's rule's window + MaxSkew but within the
//     bound is another rule's: a conflict, as [Fixed.Take] says.
//   - sliding: window_start ≤ now + MaxSkew. It is the writer's clock
//     aligned down to the window, or the state's own.
//   - log: every instant ≤ now + MaxSkew. A hit is recorded at the
//     writer's clock, or at the state's latest instant.
//   - gcra: tat ≤ now + 3 × window + MaxSkew. An allowed hit leaves tat at
//     most burst × interval ahead, less than two windows (burst ≤ limit ≤
//     the window in milliseconds and interval = ⌈window ÷ limit⌉, so
//     burst × interval < window + limit); a counted refusal adds at most
//     one window more.
//
// # Encodings
//
// Every state is one small JSON object. The fixed window's is the PHP
// original's, {"count":N,"reset_at":UNIX_SECONDS}, byte for byte. The other
// three record their window, so that a state written by another rule of
// the same name is recognised ([ratelab.ErrRuleConflict]) instead of being
// misread:
//
//	sliding  {"window":W,"window_start":S,"count":C,"prev_count":P}   seconds
//	log      {"window":W,"ts":[T1,T2,…]}                              W seconds, T milliseconds
//	gcra     {"window":W,"tat":T}                                     W seconds, T milliseconds
//
// Decoding is strict: anything but one object with the expected integer
// fields in range is an error saying what is wrong, and [Take] replaces
// such a state with a fresh one (reporting it in Result.Replaced). Only
// JSON whitespace may follow the object: a store that writes a shorter
// state over a longer one in place pads it with spaces to the old length
// before it truncates, so that a writer killed in between leaves a state
// that still decodes, on the same fast path as the bare one.
//
// A state is never too large for its rule merely because the rule's limit
// was lowered: a sliding log filled under a higher limit, up to
// [ratelab.MaxLogLimit], is valid, and Take trims it to the new limit.
// [MaxStateSize] is therefore per algorithm, not per limit.
package algorithm
