// Command weave regenerates docs/*.md from docs/src/*.md, README.md from
// docs/src/root/README.md and docs/ja/*.md from docs/src/ja/*.md: `make docs`.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ratelab/ratelab/internal/weave"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "weave-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bin")
	if err := weave.BuildBinaries(root, bin); err != nil {
		return err
	}
	docs, err := weave.All(root, bin, tmp)
	if err != nil {
		return err
	}
	for _, d := range docs {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(d.Dst)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, d.Dst), d.Want, 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", d.Dst)
	}
	return nil
}
