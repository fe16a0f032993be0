// Package sources reads every file of the repository, so that a test that
// runs the repository's own commands — builds the ratelab command, pastes
// the course — names them all as its inputs. go test keeps a passing
// result for the next run only while the files a test opened are
// unchanged: a test that runs what go build compiled in another process
// must open the sources itself, or a change to one would leave its old
// result standing.
package sources

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// skipped are the folders under the root that hold no source: git's,
// and what make and the course leave behind (both ignored by git).
var skipped = map[string]bool{".git": true, "tmp": true, "bin": true}

// Read opens and reads every file under root but the skipped folders.
//
// go test records a directory it saw opened by the names and times of
// everything in it, and every run of make test or git changes the times
// of the skipped folders: a root recorded that way would never be the
// same twice. So the root is recorded by its own stat, whose time changes
// when a name is added to it or removed, and its names are read past the
// record (unrecorded); every folder below it is recorded whole.
func Read(root string) error {
	paths, err := files(root)
	for _, path := range paths {
		if err != nil {
			break
		}
		err = readAll(path)
	}
	return err
}

// files lists the regular files Read reads, walking every folder below
// root but the skipped ones, after a stat of root.
func files(root string) ([]string, error) {
	if _, err := os.Stat(root); err != nil {
		return nil, err
	}
	names, err := unrecorded(root)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, name := range names {
		if skipped[name] {
			continue
		}
		err := filepath.WalkDir(filepath.Join(root, name), func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && skipped[d.Name()]:
				return filepath.SkipDir
			case d.Type().IsRegular():
				paths = append(paths, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// unrecorded lists the directory dir through a descriptor that the os
// package did not open, so that go test does not record the listing. On
// a system where that open fails (Windows opens no directory so), it is
// os.ReadDir's listing, recorded.
func unrecorded(dir string) ([]string, error) {
	fd, err := syscall.Open(dir, syscall.O_RDONLY, 0)
	if err != nil {
		entries, err := os.ReadDir(dir)
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name()
		}
		return names, err
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	return f.Readdirnames(-1)
}

// readAll opens and reads the file at path.
func readAll(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}
