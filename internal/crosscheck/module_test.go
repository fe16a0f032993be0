package main

import (
	"os"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/sources"
)

// TestTheModule is make cross: this module's packages checked for every
// system RATELAB_CROSS names (GOOS/GOARCH, comma-separated), as the
// command checks them. It reads every file of the module first
// (internal/sources), so that go test keeps its pass, and make cross
// takes a second, until a file changes; the standard library and the
// dependencies it checks against change only with the toolchain, which
// rebuilds this test, or with go.sum, which it reads.
func TestTheModule(t *testing.T) {
	targets := os.Getenv("RATELAB_CROSS")
	if targets == "" {
		t.Skip("run by make cross, which names the systems to check in RATELAB_CROSS")
	}
	const root = "../.."
	if err := sources.Read(root); err != nil {
		t.Fatal(err)
	}
	for _, target := range strings.Split(targets, ",") {
		var out strings.Builder
		if err := check(&out, root, target, []string{"./..."}); err != nil {
			t.Errorf("%v\n%s", err, out.String())
			continue
		}
		t.Log(strings.TrimSpace(out.String()))
	}
}
