// Command corelines prints the core of the lesson's packages and their
// non-test lines: run it at the root of the module, as make corelines does.
package main

import (
	"fmt"
	"os"

	"github.com/ratelab/ratelab/internal/corelines"
)

func main() {
	pkgs, err := corelines.Count(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	corelines.Print(os.Stdout, pkgs)
}
