//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore

// SetWrittenHook makes every hit in this process that writes a state
// shorter than the old one call f after the write and before the
// truncate. It is process-wide: only a test's child process sets it.
func SetWrittenHook(f func()) { testHookWritten = f }
