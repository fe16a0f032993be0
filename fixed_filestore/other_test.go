//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package fixedfilestore_test

import (
	"errors"
	"testing"

	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
)

func TestNewSaysFlockIsNeeded(t *testing.T) {
	_, err := fixedfilestore.New(t.TempDir(), fixedfilestore.Options{})
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("New on a platform without flock(2) semantics: got %v, want an error matching errors.ErrUnsupported", err)
	}
}
