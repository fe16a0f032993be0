// Package racetests shows, with real processes, why the file store needs
// its lock and how a file lock still goes wrong.
//
// Each demonstration is a choreography: the parent starts children (this
// binary re-executed as one of this package's [Roles]) and lets each one take its next step only when the
// step before has been reported on the child's stdout. No sleeping, no
// hoping: the interleaving that loses an update happens on every run.
//
//   - [LostUpdate]: A reads, B reads, A writes, B writes — one hit lost
//     without a lock; with flock(2) B cannot read until A has written.
//   - [TornRead]: B reads while A is halfway through its write. With the
//     original's truncate-first write the file is empty at that instant and
//     B restarts the window at count 1.
//   - [UnlinkAfterUnlock]: removing the lock file after unlocking lets two
//     processes hold "the" lock at once.
//   - [ReplaceByRename]: write-to-temp-and-rename moves the path to a new,
//     unlocked inode under the holder's feet.
//   - [HolderKilled]: a holder that dies releases its lock; the next
//     process goes on within milliseconds and nothing is lost.
//   - [Stress]: N processes × M hits on one key, released together from a
//     barrier, lock-free and with fixed_filestore.
//
// [BrokenCounter] is the read-modify-write with its lock and write order
// as switches. It exists only to be broken; use fixed_filestore.
package racetests
