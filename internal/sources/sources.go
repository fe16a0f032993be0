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
)

// skipped are the folders under the root that hold no source: git's,
// and what make and the course leave behind (both ignored by git).
var skipped = map[string]bool{".git": true, "tmp": true, "bin": true}

// Read opens and reads every file under root but the skipped folders.
func Read(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && skipped[d.Name()] && path != root:
			return filepath.SkipDir
		case !d.Type().IsRegular():
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(io.Discard, f)
		return err
	})
}
