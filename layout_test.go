package ratelab_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Imports point down, and what a program links is what it needs: a
// program that only counts hits — a CGI program, started once per request
// — does not link net/http (about 1.9 ms more per start), and the ratelab
// command does not link testing.
func TestWhatPackagesLink(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	tests := []struct {
		pkg, mustNot string
	}{
		{".", "net/http"},
		{"./algorithm", "net/http"},
		{"./broken_inmemory", "net/http"},
		{"./fixed_filestore", "net/http"},
		{"./redis_store", "net/http"},
		{"./harness/cmd/ratelab", "testing"},
		// Nothing under internal/ imports a lesson: imports point down.
		{"./internal/...", "github.com/ratelab/ratelab/race_tests"},
		{"./internal/...", "github.com/ratelab/ratelab/window_boundary"},
		{"./internal/...", "github.com/ratelab/ratelab/harness"},
		// The stores import the contract and the steps, never a lesson.
		{"./fixed_filestore", "github.com/ratelab/ratelab/harness"},
		{"./redis_store", "github.com/ratelab/ratelab/harness"},
	}
	for _, tt := range tests {
		out, err := exec.Command("go", "list", "-deps", tt.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tt.pkg, err)
		}
		if slices.Contains(strings.Fields(string(out)), tt.mustNot) {
			t.Errorf("%s links %s", tt.pkg, tt.mustNot)
		}
	}
}
