// Package ratelab is the contract every store in this repository shares,
// and the consumer that turns a store's answer into an HTTP decision.
//
// The contract mirrors the PHP original the repository is built around:
//
//	hit(key, windowSeconds) -> {count, reset_at}
//
// becomes [Store.HitAt], which records one hit for key in a fixed window and
// returns the window's [Hit]: how many hits it holds now and when it ends.
// The rule that advances a window lives in [State.Next], so every store —
// the in-memory one in broken_inmemory, the file-backed one in
// fixed_filestore — applies the same logic and differs only in where the
// state lives. That difference is the whole lesson: state kept in process
// memory is invisible to every other process.
//
// [Limiter] consumes a Store: a request is allowed while the window's count
// is at most the limit, so with a limit of 30 the 31st hit is the first one
// throttled, and a throttled client is told to retry after
// max(0, reset_at − now) whole seconds. [Middleware] puts a Limiter in front
// of an http.Handler: it answers 429 Too Many Requests with Retry-After and
// the IETF draft RateLimit-Policy and RateLimit fields, and 503 Service
// Unavailable when a fail-closed store cannot decide.
//
// Time is always a parameter. Every method that depends on the clock has an
// …At twin taking a time.Time, in the style of golang.org/x/time/rate, so
// tests and demonstrations replay any instant without sleeping.
package ratelab
