package weave

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ratelab/ratelab/internal/sources"
)

// Doc is one generated document: its source and what weaving it gives.
type Doc struct {
	Src, Dst string // relative to the repository root
	Want     []byte
}

// BuildBinaries builds the commands the docs run into dir. It reads every
// file under root first (sources.Read): a test that builds the command
// and runs it names them all as its inputs, so that go test keeps its
// result for the next run only while none of them changed.
func BuildBinaries(root, dir string) error {
	if err := sources.Read(root); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cmd := Build(root, dir+string(os.PathSeparator))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("weave: build: %v: %s", err, out)
	}
	return nil
}

// Build returns the go build of the ratelab command in root, written to
// out, as make builds it. -trimpath: the checkout's path stays out of the
// build cache's keys, so every copy of the repository a test makes builds
// from the cache, the packages it changed alone compiled again.
// CGO_ENABLED=0: a static binary, without the dynamic loader and the C
// library to start — every request under CGI and every child of a demo
// is a start of it, and a ratelab hit took 15.8 ms of CPU against 17.7
// ms dynamically linked (perf stat, the medians of six rounds of 100
// starts each, the two taking turns, a quiet 2-core machine, 2026-12-07).
// Every build of the command must agree, or each compiles every package
// above net a second time.
func Build(root, out string) *exec.Cmd {
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./harness/cmd/ratelab")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}

// RootREADME is the source of the repository's README.md.
const RootREADME = "docs/src/root/README.md"

// JaSources holds the Japanese course: docs/src/ja/*.md, woven into
// docs/ja/*.md.
const JaSources = "docs/src/ja"

// family is a set of sources woven into one directory.
type family struct {
	glob, dstDir string
	opts         Options // LinkPrefix and From
}

var families = []family{
	{"docs/src/*.md", "docs", Options{LinkPrefix: "../"}},
	{RootREADME, ".", Options{LinkPrefix: "./"}},
	{JaSources + "/*.md", "docs/ja", Options{LinkPrefix: "../../", From: "引用元"}},
}

// All weaves every docs/src/*.md under root into docs/, RootREADME into
// README.md and every JaSources/*.md into docs/ja/, running commands from
// binDir, each document in a fresh scratch directory under tmp. A
// document whose commands so far are those of a document woven before it
// (a Japanese page and its English twin) shows that document's output
// instead of running them again: both pages show the same runs.
func All(root, binDir, tmp string) ([]Doc, error) {
	runs := Runs{}
	var docs []Doc
	for _, fam := range families {
		srcs, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(fam.glob)))
		if err != nil {
			return nil, err
		}
		for _, src := range srcs {
			d, err := weaveOne(root, src, fam, Options{Root: root, BinDir: binDir, Runs: runs}, tmp)
			if err != nil {
				return nil, err
			}
			docs = append(docs, d)
		}
	}
	return docs, nil
}

// AllShown weaves every document as All does, but shows for each %run
// the output its last woven page shows (Options.Shown), running nothing:
// what it finds stale is the code and the prose. Whether the output shown
// is what the commands print is the paste's to check: a reader pastes
// every command of the pages.
func AllShown(root string) ([]Doc, error) {
	var docs []Doc
	for _, fam := range families {
		srcs, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(fam.glob)))
		if err != nil {
			return nil, err
		}
		for _, src := range srcs {
			dst := dstOf(src, fam)
			shown, err := os.ReadFile(filepath.Join(root, dst))
			if err != nil {
				return nil, fmt.Errorf("weave: %s: %w (run make docs)", dst, err)
			}
			d, err := weaveOne(root, src, fam, Options{Root: root, Shown: shown}, "")
			if err != nil {
				return nil, err
			}
			docs = append(docs, d)
		}
	}
	return docs, nil
}

// dstOf is the page src of fam is woven into, relative to the root.
func dstOf(src string, fam family) string {
	if fam.glob == RootREADME {
		return "README.md"
	}
	return filepath.Join(fam.dstDir, filepath.Base(src))
}

func weaveOne(root, src string, fam family, opts Options, tmp string) (Doc, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return Doc{}, err
	}
	if opts.Shown == nil {
		if opts.Scratch, err = os.MkdirTemp(tmp, "doc-"); err != nil {
			return Doc{}, err
		}
	}
	rel, _ := filepath.Rel(root, src)
	opts.LinkPrefix, opts.From = fam.opts.LinkPrefix, fam.opts.From
	dst := dstOf(src, fam)
	out, err := Weave(filepath.ToSlash(rel), b, opts)
	if err != nil {
		return Doc{}, err
	}
	return Doc{Src: rel, Dst: filepath.Clean(dst), Want: out}, nil
}

var link = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)

// BrokenLinks returns the relative links in the Markdown file at path
// (relative to root) whose targets do not exist.
func BrokenLinks(root, path string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	var broken []string
	for _, m := range link.FindAllStringSubmatch(string(b), -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, filepath.Dir(path), target)); err != nil {
			broken = append(broken, target)
		}
	}
	return broken, nil
}
