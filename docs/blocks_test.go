package docs

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab/internal/weave"
	"github.com/ratelab/ratelab/lab/lighttpdserver"
)

// fenced is one fenced code block of a page: the heading of the "## "
// section it is in, its language and its text.
type fenced struct {
	section, lang, body string
}

// fencedBlocks returns the fenced blocks of a generated page, without its
// console blocks: those are the weaver's %run output, run by make docs and
// by the reader test.
func fencedBlocks(t *testing.T, page string) []fenced {
	t.Helper()
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	var out []fenced
	var cur *fenced
	section := ""
	for line := range strings.Lines(string(b)) {
		switch {
		case cur != nil && strings.TrimSpace(line) == "```":
			if cur.lang != "console" {
				out = append(out, *cur)
			}
			cur = nil
		case cur != nil:
			cur.body += line
		case strings.HasPrefix(line, "```"):
			cur = &fenced{section: section, lang: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
		case strings.HasPrefix(line, "## "):
			section = strings.TrimSpace(strings.TrimPrefix(line, "## "))
		}
	}
	return out
}

// Every code block of the solutions page is run: the Go ones applied as
// edits to a fresh copy of the repository, built and tested, the shell
// ones run against the server the workshop starts. A block no subtest
// claims fails the test.
func TestEverySolutionBlockRuns(t *testing.T) {
	t.Parallel() // its own copy of the repository, or its own ports: beside the paste, which is most of the package
	if testing.Short() {
		t.Skip("builds copies of the repository; skipped with -short")
	}
	blocks := fencedBlocks(t, "workshop-solutions.md")
	ran := make([]bool, len(blocks))
	of := func(section, lang string) (bodies []string) {
		for i, b := range blocks {
			if strings.HasPrefix(b.section, section+". ") && b.lang == lang {
				ran[i] = true
				bodies = append(bodies, b.body)
			}
		}
		return bodies
	}
	t.Run("1 the shared in-memory store", func(t *testing.T) { sharedInMemory(t, of("1", "go")) })
	t.Run("3 breaking the login state", func(t *testing.T) { breakTheLoginState(t, of("3", "sh")) })
	for i, b := range blocks {
		if !ran[i] {
			t.Errorf("section %s: a %s block that no test runs:\n%s", b.section, b.lang, b.body)
		}
	}
}

// sharedInMemory applies section 1's Go: a line that assigns to s is the
// first of TakeAt's body, the rest goes at the end of store.go. The
// cross-instance test must then fail, and make demo-broken still show CGI
// never answering 429.
func sharedInMemory(t *testing.T, snippets []string) {
	require.NotEmpty(t, snippets, "section 1 has no Go block")
	clone, _ := freshClone(t, "..")
	path := filepath.Join(clone, "broken_inmemory", "store.go")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	src := string(b)
	sig := regexp.MustCompile(`(?m)^func \(s \*Store\) TakeAt\(.*\{\n`).FindString(src)
	require.NotEmpty(t, sig, "TakeAt's signature in broken_inmemory/store.go")
	for _, s := range snippets {
		if strings.HasPrefix(s, "s = ") {
			src = strings.Replace(src, sig, sig+"\t"+s, 1)
		} else {
			src += "\n" + s
		}
	}
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))

	test := exec.Command("go", "test", "-trimpath", "-count=1", "-run", "AcrossInstances", "./broken_inmemory")
	test.Dir = clone
	out, err := test.CombinedOutput()
	require.Error(t, err, "the cross-instance test must fail with the shared map; it printed:\n%s", out)
	require.Contains(t, string(out), "a second instance saw the first one's hit", "the test fails for the reason the solution gives, not a compile error")

	require.NoError(t, weave.BuildBinaries(clone, filepath.Join(clone, "bin")))
	demo := exec.Command(filepath.Join(clone, "bin", "ratelab"), "demo", "-store", "memory", "-requests", "130", "-at", "2026-07-09T00:00:00Z", "-stable")
	out, err = demo.Output()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `(?m)^ +cgi +one by one +130 +130 +0 `, string(out), "CGI still never answers 429")
	assert.Contains(t, string(out), "PASS: every row shows what the demo claims")
}

// breakTheLoginState starts the server of exercise 3 as the workshop
// gives it, on a free port, and runs section 3's shell in the directory it
// was started in: each curl prints the code its comment names.
func breakTheLoginState(t *testing.T, scripts []string) {
	require.Len(t, scripts, 1, "section 3's shell blocks")
	serve := workshopLine(t, "`(ratelab serve -model single -store file -dir tmp/login [^`]*)`")
	bin := t.TempDir()
	require.NoError(t, weave.BuildBinaries("..", bin))
	dir := t.TempDir()
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	srv := exec.Command("sh", "-c", "mkdir -p tmp/login && exec "+strings.Trim(serve, "`")+" -addr 127.0.0.1:0")
	srv.Dir, srv.Env = dir, env
	stdout, err := srv.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	sc := bufio.NewScanner(stdout)
	require.True(t, sc.Scan(), "the server printed no URL")
	url := strings.TrimSuffix(strings.TrimSpace(sc.Text()), "/demo")

	script := strings.ReplaceAll(scripts[0], "http://127.0.0.1:8080", url)
	sh := exec.Command("sh", "-c", script)
	sh.Dir, sh.Env = dir, env
	out, err := sh.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var want []string
	for _, m := range regexp.MustCompile(`(?m)^curl .*# (\d{3})\b`).FindAllStringSubmatch(scripts[0], -1) {
		want = append(want, m[1])
	}
	require.NotEmpty(t, want, "section 3's curls name the codes they expect in a comment")
	assert.Equal(t, want, strings.Fields(string(out)), "the codes the curls printed")
}

// The execution models chapter's "On your own server": its wrapper, with
// the paths filled in, in the cgi-bin of a private lighttpd configured as
// the chapter shows, and its curl loop run against it, prints the output
// the chapter shows.
func TestOwnServerBlocksUnderLighttpd(t *testing.T) {
	t.Parallel() // its own copy of the repository, or its own ports: beside the paste, which is most of the package
	if testing.Short() {
		t.Skip("starts lighttpd; skipped with -short")
	}
	var own []fenced
	for _, b := range fencedBlocks(t, "execution-models.md") {
		if b.section == "On your own server" {
			own = append(own, b)
		}
	}
	require.Len(t, own, 4, "the section's blocks: the wrapper, the lighttpd configuration, the curl loop and its output")
	wrapper, curl, shown := own[0], own[2], own[3]
	require.True(t, strings.HasPrefix(wrapper.body, "#!/bin/sh\n"), "the first block is the wrapper:\n%s", wrapper.body)
	require.Equal(t, "text", shown.lang, "the block after the curl loop shows its output")
	require.Contains(t, own[1].body, strings.TrimSpace(lighttpdserver.Config), "the configuration the private lighttpd runs")

	bin, state := t.TempDir(), t.TempDir()
	require.NoError(t, weave.BuildBinaries("..", bin))
	script := strings.NewReplacer("/path/to/ratelab", filepath.Join(bin, "ratelab"), "/path/to/state", state).Replace(wrapper.body)
	srv := lighttpdserver.ForTest(t, map[string]string{"ratelab": script})

	cmd := exec.Command("bash", "-c", strings.ReplaceAll(curl.body, "http://127.0.0.1/", srv.URL+"/"))
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, shown.body, string(out), "what the curl loop printed")
}

// The curl loop of "Try it by hand" and of the workshop's section 1, run
// as a reader runs it against make serve-broken and make serve-fixed:
// each response shows its status and its X-Ratelab-Pid, every pid is a
// different process (CGI), and the file store refuses from the 31st.
func TestServeLoopShowsEachPid(t *testing.T) {
	t.Parallel() // its own copy of the repository, or its own ports: beside the paste, which is most of the package
	if testing.Short() {
		t.Skip("starts ratelab serve; skipped with -short")
	}
	bin := t.TempDir()
	require.NoError(t, weave.BuildBinaries("..", bin))
	for _, page := range []struct{ file, section string }{
		{"execution-models.md", "Try it by hand"},
		{"workshop.md", "1. The failure"},
	} {
		var loop []string
		for _, b := range fencedBlocks(t, page.file) {
			if strings.HasPrefix(b.section, page.section) && b.lang == "sh" {
				for line := range strings.Lines(b.body) {
					if strings.HasPrefix(line, "for ") || strings.HasPrefix(line, "curl ") {
						loop = append(loop, line)
					}
				}
			}
		}
		require.Len(t, loop, 2, "%s, %q: the curl loop and the headers' curl", page.file, page.section)
		for _, store := range []string{"memory", "file"} {
			out := againstServe(t, filepath.Join(bin, "ratelab"), store, strings.Join(loop, ""))
			lines := strings.Split(out, "\n")
			require.Greater(t, len(lines), 35, "%s, -store %s: the loop printed:\n%s", page.file, store, out)
			pids := map[string]bool{}
			for i, line := range lines[:35] {
				m := regexp.MustCompile(`^HTTP/1\.1 (\d{3}) .* X-Ratelab-Pid: (\d+)$`).FindStringSubmatch(line)
				require.NotNil(t, m, "%s, -store %s, request %d prints its status and pid: %q", page.file, store, i+1, line)
				want := "200"
				if store == "file" && i >= 30 {
					want = "429"
				}
				assert.Equal(t, want, m[1], "%s, -store %s, request %d", page.file, store, i+1)
				pids[m[2]] = true
			}
			assert.Len(t, pids, 35, "%s, -store %s: every response names a different process", page.file, store)
			assert.Contains(t, strings.Join(lines[35:], "\n"), "\nRatelimit-Policy: ", "%s: the headers' curl prints Go's canonical field names", page.file)
		}
	}
}

// againstServe runs script against ratelab serve under CGI with store, as
// make serve-broken and serve-fixed start it but on a free port, and
// returns what the script printed.
// interrupt stops a server as the reader's Ctrl-C does, so that it
// removes the scratch directory it made; one that has not stopped after
// 20 s is killed.
func interrupt(srv *exec.Cmd) {
	srv.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		srv.Process.Kill()
		<-done
	}
}

func againstServe(t *testing.T, ratelab, store, script string) string {
	t.Helper()
	srv := exec.Command(ratelab, "serve", "-model", "cgi", "-store", store, "-addr", "127.0.0.1:0")
	srv.Dir = t.TempDir()
	stdout, err := srv.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	defer interrupt(srv)
	sc := bufio.NewScanner(stdout)
	require.True(t, sc.Scan(), "the server printed no URL")
	url := strings.TrimSuffix(strings.TrimSpace(sc.Text()), "/demo")
	out, err := exec.Command("bash", "-c", strings.ReplaceAll(script, "http://127.0.0.1:8080", url)).Output()
	require.NoError(t, err)
	return string(out)
}
