//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package fixedfilestore_test

import (
	"testing"

	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
)

func TestNewSaysFlockIsNeeded(t *testing.T) {
	_, err := fixedfilestore.New(t.TempDir(), fixedfilestore.Options{})
	if err == nil {
		t.Fatal("New succeeded on a platform without flock(2) semantics")
	}
}
