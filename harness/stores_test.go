package harness_test

import (
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
	"github.com/ratelab/ratelab/harness"
)

type nop struct{}

func (nop) Close() error { return nil }

// A kind registers once, with an opener; the lesson's two are there from
// the start, and Kinds lists what this binary runs, in that order.
func TestRegister(t *testing.T) {
	open := func(harness.App, *slog.Logger) (ratelab.Store, io.Closer, error) {
		return new(brokeninmemory.Store), nop{}, nil
	}
	assert.Panics(t, func() { harness.Register(harness.File, harness.Kind{Open: open}) }, "a kind twice")
	assert.Panics(t, func() { harness.Register("no-open", harness.Kind{}) }, "a kind without Open")
	kind := harness.Kind{Reach: harness.OneProcess, Open: open}
	if slices.Contains(harness.Kinds(), "test-kind") { // a rerun (-count=N) in the process whose registry the first run filled
		assert.Panics(t, func() { harness.Register("test-kind", kind) }, "a kind twice")
	} else {
		harness.Register("test-kind", kind)
	}
	assert.Equal(t, []harness.StoreKind{harness.Memory, harness.File, "test-kind"}, harness.Kinds())
	_, err := harness.App{Store: "apcu", Limit: 1, Window: 3600e9}.Check()
	assert.ErrorContains(t, err, `unknown store "apcu": use memory, file or test-kind`)
}
