package fixedfilestore

// SetOpenedHook makes every hit of s call f between opening its state file
// and locking it, so tests can orchestrate a sweep into that gap.
func SetOpenedHook(s *Store, f func()) { s.testHookOpened = f }
