// Package syncbuf is a bytes.Buffer that several goroutines may write and
// read at once: a child process's stderr copier and the test reading it, or
// a logger shared by goroutines.
package syncbuf

import (
	"bytes"
	"io"
	"sync"
)

// Buffer collects what is written to it. The zero value is ready to use.
type Buffer struct {
	// Tee, if set, also receives everything written.
	Tee io.Writer
	// Limit, if positive, stops keeping: once the buffer holds Limit bytes
	// or more, later writes are dropped (but still passed to Tee); the
	// write that crosses Limit is kept whole.
	Limit int

	mu  sync.Mutex
	buf bytes.Buffer
}

// Write keeps p, within Limit, passes it to Tee, and never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Limit <= 0 || b.buf.Len() < b.Limit {
		b.buf.Write(p)
	}
	if b.Tee != nil {
		b.Tee.Write(p)
	}
	return len(p), nil
}

// String returns what was kept so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
