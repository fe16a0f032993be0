package redisstore

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/ratelab/ratelab"
)

// Key returns the Redis key holding the state of key under r: the
// prefix, the algorithm and, in braces, the digest of the rule's state
// key, as in "ratelab:fixed:{<hex sha256("demo-start:ip:203.0.113.7")>}".
// A fixed window is two strings: its count there, its reset_at in the
// same name followed by ":reset_at". The braces are a Redis Cluster hash
// tag, which puts both in one slot.
func (s *Store) Key(r ratelab.Rule, key string) string {
	r = r.Normalized()
	return countKey(r, s.key(r, key))
}

// countKey is the Key of name, what key returns for r: a fixed window's
// count, before its reset_at's suffix.
func countKey(r ratelab.Rule, name string) string {
	if r.Algorithm == ratelab.FixedWindow {
		return name[:len(name)-len(fixedResetSuffix)]
	}
	return name
}

// key is Key for r, a checked rule, followed for a fixed window
// by fixedResetSuffix — the name of its reset_at, of which its count's is
// the start — built in one allocation: the digest of
// ratelab.KeyDigest(r.StateKey(key)), hashed from a buffer on the stack
// when the state key fits, hex-encoded in place.
func (s *Store) key(r ratelab.Rule, key string) string {
	var in [128]byte
	sum := sha256.Sum256(append(append(append(in[:0], r.Name...), ':'), key...))
	var hx [2 * sha256.Size]byte
	hex.Encode(hx[:], sum[:])
	var b strings.Builder
	b.Grow(len(s.prefix) + len(r.Algorithm) + 3 + len(hx) + len(fixedResetSuffix))
	b.WriteString(s.prefix)
	b.WriteString(string(r.Algorithm))
	b.WriteString(":{")
	b.Write(hx[:])
	b.WriteByte('}')
	if r.Algorithm == ratelab.FixedWindow {
		b.WriteString(fixedResetSuffix)
	}
	return b.String()
}
