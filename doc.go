// Package ratelab is the contract every store in this repository shares,
// and the Limiter that asks a store for each of its rules' decisions.
//
// The PHP original the repository is built around has one rule and one
// call:
//
//	hit(key, windowSeconds) -> {count, reset_at}     // allowed while count <= 30
//
// Here the rule is a value, [Rule] — a name, a limit, a window, an
// [Algorithm] and, for GCRA, a burst — and the store receives it, with a
// context, and returns the decision: [Store.TakeAt](ctx, rule, key, now)
// gives a [Decision] {Allowed, Remaining, RetryAfter, ResetAfter, Source},
// as go-redis/redis_rate's Allow does. Because the store owns
// the whole step, every algorithm is a real store: the original's fixed
// window, the sliding-window counter, the exact sliding log and GCRA, each
// one pure step (package algorithm) that the in-memory store runs under a
// mutex, the file store under flock(2) and the Redis store as one script.
// That the in-memory store is the one that fails is the whole lesson:
// state kept in process memory is invisible to every other process.
//
// A rule's name is part of the state's key (Name + ":" + key), so two rules
// on one key never touch each other's state, and the original's key
// "demo-start:ip:203.0.113.7" is rule "demo-start" counting
// "ip:203.0.113.7": the same key names the same state. Time
// never runs backwards inside a state: a hit stamped earlier than the
// state it lands in counts in that state, never resetting it.
//
// [Limiter] consumes a Store with one rule or several (a compound limiter:
// every rule takes every hit, the strictest decision wins). Package
// httplimit puts a Limiter in front of an http.Handler, passes the
// request's context down, and answers 429 Too Many Requests with
// Retry-After and the IETF draft RateLimit-Policy and RateLimit fields,
// and 503 Service Unavailable when a fail-closed store cannot decide; it
// is a package of its own so that this one, and every store, links no
// net/http.
//
// The layout: this package is what a library user needs; package
// algorithm is what a store author needs; the stores (broken_inmemory,
// fixed_filestore, redis_store) import both; the lessons (harness,
// race_tests, window_boundary) import the stores. Imports point down.
//
// Time is always a parameter. Every method that depends on the clock has an
// …At twin taking a time.Time, in the style of golang.org/x/time/rate, so
// tests and demonstrations replay any instant without sleeping.
package ratelab
