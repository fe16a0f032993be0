// Package beyondonehost shows, against real Redis servers, what the
// chapter "Beyond one host" teaches about keeping a rate limit in Redis:
// the mistakes hand-written Redis limiters make, and what a failover does
// to counts already acknowledged.
//
//   - [IncrThenExpire]: INCR, then EXPIRE, two commands; a client that
//     dies between them leaves a count that never resets. [Pitfalls]
//     shows it beside the store's script, which sets the expiry with the
//     count.
//   - [Lock]: a TTL lock released by a plain DEL deletes whatever lock is
//     there — after the TTL ran out, someone else's; [Lock.Release] checks
//     the token in one script.
//   - [Failover]: asynchronous replication forgets the hits a primary
//     acknowledged before it died, and the limit is exceeded by as many;
//     WAIT for a replica, or min-replicas-to-write, fail-closed, holds it.
//
// The store itself is package redisstore; nothing here is meant to be
// used in an application.
package beyondonehost
