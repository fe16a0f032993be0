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

// A document that runs the commands another one ran, in the same order,
// shows that one's output: a Japanese page and its English twin show the
// same runs. A different command before it is a different history.
func TestRunsAreShared(t *testing.T) {
	root := t.TempDir()
	runs := Runs{}
	weave := func(src string) string {
		out, err := Weave("src.md", []byte(src), Options{Root: root, BinDir: root, Scratch: t.TempDir(), Runs: runs})
		require.NoError(t, err)
		_, body, _ := strings.Cut(string(out), "\n\n")
		return body
	}
	const pid = "%run echo $$\n"
	first := weave("# en\n" + pid)
	assert.Equal(t, strings.Replace(first, "en", "ja", 1), weave("# ja\n"+pid), "the same command, shown once run")
	other := weave("%run true\n" + pid)
	assert.NotContains(t, other, strings.TrimPrefix(first, "# en\n"), "after another command, run again")
	require.NoError(t, os.WriteFile(filepath.Join(root, "x.go"), []byte(source), 0o644))
	out, err := Weave("x.md", []byte("%include x.go inner\n"), Options{Root: root, From: "引用元"})
	require.NoError(t, err)
	assert.Contains(t, string(out), "<sub>引用元 [x.go](../x.go)</sub>")
}

func TestBrokenLinks(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.md"), []byte("[ok](a.md) [web](https://go.dev) [bad](nope.go#L1)"), 0o644))
	broken, err := BrokenLinks(root, "a.md")
	require.NoError(t, err)
	assert.Equal(t, []string{"nope.go"}, broken)
	assert.False(t, strings.Contains(strings.Join(broken, ""), "https"))
}

// Woven from the page it was last woven into, a %run shows what the page
// shows and runs nothing; a command the page does not show is an error,
// and so is a page whose prose no longer matches its source.
func TestShownRunsNothing(t *testing.T) {
	const src = "# title\n%run echo $$\nprose\n"
	page := []byte("<!-- header -->\n\n# title\n```console\n$ echo $$\n12345\n```\nprose\n")
	out, err := Weave("src.md", []byte(src), Options{Root: t.TempDir(), Shown: page})
	require.NoError(t, err)
	_, body, _ := strings.Cut(string(out), "\n\n")
	_, want, _ := strings.Cut(string(page), "\n\n")
	assert.Equal(t, want, body, "the page's own output, nothing run")
	_, err = Weave("src.md", []byte("%run echo other\n"), Options{Root: t.TempDir(), Shown: page})
	assert.ErrorContains(t, err, "the woven page does not show it")
}
