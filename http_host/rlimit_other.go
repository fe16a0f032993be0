//go:build !unix

package httphost

import "errors"

// fdLimit is unknown here.
func fdLimit() (uint64, error) { return 0, errors.New("httphost: no descriptor limit on this system") }
