//go:build !unix

package harness

import "errors"

// fdLimit is unknown here.
func fdLimit() (uint64, error) { return 0, errors.New("harness: no descriptor limit on this system") }
