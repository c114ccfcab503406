// Package testlog holds what tests use to read the logs of the code they
// run.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a log sink safe for concurrent writers (River's goroutines, a
// child process's output copier) and a reader.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
