package flood

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

const size = 256 << 10 // each writer's bytes

// Two floods of one package, in parallel, both replaced the command at
// once: they shared one temporary name, and one renamed the file while
// the other still wrote it ("no such file or directory", "text file
// busy"). Writers at once, each with other bytes, now each succeed, the
// file holds one writer's bytes whole, and nothing else is left.
func TestReplaceIfChangedWithWritersAtOnce(t *testing.T) {
	for range 10 { // the old code failed in about one round of five
		writersAtOnce(t, t.TempDir())
	}
}

func writersAtOnce(t *testing.T, dir string) {
	to := filepath.Join(dir, "out", "ratelab")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		from := filepath.Join(dir, fmt.Sprintf("from%d", i))
		if err := os.WriteFile(from, bytes.Repeat([]byte{byte('a' + i)}, size), 0o644); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { errs[i] = replaceIfChanged(from, to) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	got, err := os.ReadFile(to)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != size || !bytes.Equal(got, bytes.Repeat(got[:1], size)) {
		t.Errorf("the file holds %d bytes, not one writer's whole", len(got))
	}
	if left, _ := os.ReadDir(filepath.Dir(to)); len(left) != 1 {
		t.Errorf("left beside the file: %v", left)
	}
}
