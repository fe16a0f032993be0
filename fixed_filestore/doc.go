// Package fixedfilestore is a rate-limit store that keeps each rule's
// state for each key in a file, so that every process on the machine — CGI
// children, pool workers, a cron sweep, the PHP original — sees the same
// count. It runs every algorithm of package algorithm.
//
// # Layout
//
// The state of key under a fixed-window rule named name lives at
//
//	<base>/rate-limits/<hex sha256(name + ":" + key)>.json
//
// holding {"count":N,"reset_at":UNIX_SECONDS}, byte for byte what the PHP
// original writes for its key name:key, so both can share one directory.
// The other algorithms' files end in .sliding.json, .log.json and
// .gcra.json (see package algorithm for their contents). Hashing the key gives a
// fixed-length name whatever the key holds (no path traversal, no name too
// long) and one file, hence one lock, per key. The directory is created
// 0700 and files 0600.
//
// # One hit
//
//  1. Open the file read-write, creating it if absent and never truncating
//     it (the original's fopen mode "c+"; O_TRUNC would wipe the count
//     before it was read). A symlink at the path is refused (O_NOFOLLOW).
//  2. Take an exclusive flock(2) on that descriptor, waiting at most
//     Options.LockWait. Every other hitter of the key waits here, which makes
//     the read-modify-write below atomic.
//  3. Check that the locked file still has exactly one name (its link
//     count, by fstat): a sweep may have unlinked it while this hitter
//     waited (no name), so start over and the hit lands in the live file;
//     a hard link (two names) is refused, never written through.
//  4. Read the state, apply the rule's step (algorithm.Take), write it
//     back at offset 0 — a shorter state padded with spaces to the old
//     length, in the same write — and truncate to the new length; a hit
//     the algorithm refuses without recording it writes nothing. The file
//     holds a whole state at every instant: it never passes through zero
//     length, and a holder killed between the write and the truncate
//     leaves the new state and blanks, never the tail of the old one. On
//     ext4 it is several times cheaper than the
//     original's ftruncate(0)-then-write, which triggers ext4's
//     auto_da_alloc flush on close (docs/performance.md has the figure and
//     names the filesystem).
//  5. Unlock (deferred, so no path out of the function keeps the lock) and
//     close.
//
// # When the state cannot be reached
//
// If the file cannot be opened, read or written — the directory is gone,
// the disk is full — the hit is an error naming the path and the cause and
// wrapping [ratelab.ErrUnavailable]. The store decides nothing more: the
// policy is the caller's, [ratelab.WithFailPolicy]. Fail-open (as in the
// original) logs the error and allows the hit, Decision.Source
// ratelab.Uncounted; fail-closed logs and returns it, and the middleware
// answers 503.
//
// A lock not free within LockWait is load, not an outage: a long queue on
// one hot key — a flood of processes on two cores keeps the holder waiting
// for a core among them — cannot be told from a holder that hangs, and
// only the first can be sent. The error wraps [ratelab.ErrBusy], which the
// policy refuses under fail-open as under fail-closed (503); fail-local
// decides it in the process. (A process out of file descriptors is load
// too, whatever its store: the policy itself refuses it.)
//
// A state file that exists but cannot be parsed (garbage, truncated, too
// large, negative) carries no count worth keeping: it is logged, with its
// first bytes quoted, and replaced by a fresh one. A state written by
// another rule of the same name is reported as ratelab.ErrRuleConflict and
// left as it is. The lock wait also ends when the hit's context ends.
//
// # Sweeping
//
// Each key leaves a file behind. [Store.SweepAt] removes those whose own
// state is over (a fixed window that has ended, say), as the original's
// cron job removes old files, but unlike it never makes a concurrent hit
// lose its count: it takes each file's lock without waiting, skips files
// that are busy, judges the state under the lock, and unlinks only while
// it holds the lock. A hitter that was waiting for that lock then finds,
// in step 3, that its file is gone, and retries.
//
// # Platforms
//
// The store needs flock(2) semantics — advisory, whole-file, owned by the
// open file description and released by the kernel when the holder dies —
// and builds them on Linux, macOS and the BSDs (make cross vets FreeBSD
// and OpenBSD; only Linux runs the tests here). Elsewhere [New] returns an
// error saying so; illumos has no flock(2), and a port there would use
// fcntl's open-file-description locks. flock(2) works between processes of one machine: on NFS it is
// emulated with byte-range locks or not at all, and two machines behind a
// load balancer each keep their own files.
//
// The hit (hit.go), the lock (lock.go), the sweep and the rest are
// portable code over a few functions of one system call each, in
// fd_unix.go; fd_other.go's twins return an error that
// errors.Is(err, errors.ErrUnsupported) matches.
//
// The locking is plain flock(2) on the descriptor the store reads and
// writes, rather than github.com/gofrs/flock: that package owns a descriptor
// of its own, opened read-only and closed on Unlock, which suits a separate
// lock file but not a state file read and written under its own lock.
package fixedfilestore
