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
