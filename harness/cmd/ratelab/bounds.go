package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The bounds of a run's sizes: a run keeps what it sends in memory, and a
// size far past them would take the machine's memory or a day.
const (
	maxRequests    = 100_000
	maxConcurrency = 1000
	maxHits        = 100_000
)

// checkOutput reports what would keep a file from being written at path
// once a run is over: a directory there, or no directory to hold it.
func checkOutput(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return errors.New("is a directory")
	}
	st, err := os.Stat(filepath.Dir(path))
	if err == nil && !st.IsDir() {
		err = fmt.Errorf("%s is not a directory", filepath.Dir(path))
	}
	return err
}

// checkSizes checks that a run's two sizes are each from 1 to their bound.
func checkSizes(name1 string, n1, max1 int, name2 string, n2, max2 int) error {
	if n1 < 1 || n1 > max1 {
		return usagef("%s %d: from 1 to %d", name1, n1, max1)
	}
	if n2 < 1 || n2 > max2 {
		return usagef("%s %d: from 1 to %d", name2, n2, max2)
	}
	return nil
}
