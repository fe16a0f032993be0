//go:build !unix

package breaker

// noFollow is 0 where open has no O_NOFOLLOW.
const noFollow = 0
