package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file that builds only on one system, and its test, are checked when
// that system is a target and only then: its types, its functions' bodies
// (a linknamed one may have none) and go vet's analyzers.
func TestCheckFindsWhatOnlyAnotherSystemBuilds(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.22\n")
	write("m.go", "package m\n\nfunc F() int { return 1 }\n")
	write("m_windows.go", "//go:build windows\n\npackage m\n\nvar _ = undefinedOnWindows\n")
	write("m_openbsd_test.go", "package m\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) { var _ string = F() }\n")
	write("m_freebsd.go", "package m\n\nfunc noBody()\n")
	write("m_netbsd.go", "package m\n\nimport \"fmt\"\n\nvar _ = fmt.Sprintf(\"%d\", \"x\")\n")
	write("m_dragonfly.go", "package m\n\nimport _ \"embed\"\n\n//go:embed missing.txt\nvar notice string\n")
	write("m_darwin.go", "package m\n\nimport _ \"unsafe\"\n\n//go:linkname nanotime runtime.nanotime\nfunc nanotime() int64\n")

	tests := []struct {
		target string
		want   string // "" for no error
	}{
		{"linux/amd64", ""},
		{"darwin/arm64", ""},
		{"windows/amd64", "undefined: undefinedOnWindows"},
		{"openbsd/amd64", "cannot use F() (value of type int) as string value"},
		{"freebsd/amd64", "m_freebsd.go:3:1: missing function body"},
		{"dragonfly/amd64", "pattern missing.txt: no matching files found"},
		{"netbsd/amd64", "fmt.Sprintf format %d has arg \"x\" of wrong type string"},
		{"plan9", `target "plan9" is not GOOS/GOARCH`},
	}
	for _, tt := range tests {
		var out strings.Builder
		err := check(&out, dir, tt.target, []string{"./..."})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: got %v (output %q), want no error", tt.target, err, out.String())
		case tt.want != "" && (err == nil || !strings.Contains(out.String()+err.Error(), tt.want)):
			t.Errorf("%s: got %v, output %q; want an error saying %q", tt.target, err, out.String(), tt.want)
		}
	}
}
