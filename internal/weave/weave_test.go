package weave

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const source = `package x

// !+outer
func A() {
	// !+inner
	x := 1
	// !-inner
	_ = x
}

// !-outer
`

func TestRegion(t *testing.T) {
	tests := []struct{ name, want string }{
		{"inner", "x := 1\n"},
		{"outer", "func A() {\n\tx := 1\n\t_ = x\n}\n"}, // blank lines at either end dropped
	}
	for _, tt := range tests {
		got, err := Region(source, tt.name)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, "region %s", tt.name)
	}
	whole, err := Region(source, "")
	require.NoError(t, err)
	assert.NotContains(t, whole, "!+", "markers never reach the docs")
	_, err = Region(source, "gone")
	assert.ErrorContains(t, err, `no region "gone"`)
}

func TestWeave(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "x.go"), []byte(source), 0o644))
	opts := Options{Root: root, BinDir: root, Scratch: t.TempDir()}

	out, err := Weave("src.md", []byte("# T\n%include x.go inner\n%run echo hi; exit 3\n"), opts)
	require.NoError(t, err)
	s := string(out)
	assert.Contains(t, s, "```go\nx := 1\n```")
	assert.Contains(t, s, "from [x.go](../x.go)")
	assert.Contains(t, s, "```console\n$ echo hi; exit 3\nhi\n[exit status 3]\n```")

	_, err = Weave("src.md", []byte("%include x.go missing\n"), opts)
	assert.ErrorContains(t, err, "src.md:1")
	_, err = Weave("src.md", []byte("%include nofile.go\n"), opts)
	assert.Error(t, err)
	_, err = Weave("src.md", []byte("%run false\n"), opts)
	assert.ErrorContains(t, err, "exit status 1", "a command that fails silently breaks the doc")
}

func TestBrokenLinks(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.md"), []byte("[ok](a.md) [web](https://go.dev) [bad](nope.go#L1)"), 0o644))
	broken, err := BrokenLinks(root, "a.md")
	require.NoError(t, err)
	assert.Equal(t, []string{"nope.go"}, broken)
	assert.False(t, strings.Contains(strings.Join(broken, ""), "https"))
}
