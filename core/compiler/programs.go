package compiler

import (
	"sync"

	"github.com/bpc-platform/bpc/core/rules"
)

// programCacheSize bounds the checked rule programs kept in memory. A
// service compiles many passports against few published rule package
// versions, so a small cache holds the working set.
const programCacheSize = 64

// programs caches checked programs by the SHA-256 of their DSL source. A
// rule package version's source never changes once published, and a checked
// Program is immutable (Evaluate only reads it, from any number of
// goroutines), so reusing one changes no output: CompilePassport stays a
// function of its input. Only sources that passed Check and the payload path
// check are cached; a failing source is checked again every time, which keeps
// its error exact. A cached program is reused only within the caller's rule
// limits (Program.Within), so the cache is no way around a lower node budget.
var programs = &programCache{byDigest: map[string]*rules.Program{}}

type programCache struct {
	mu       sync.Mutex
	byDigest map[string]*rules.Program
	order    []string // insertion order, for eviction
}

// checked returns the checked program of src, whose SHA-256 hex is digest,
// within limits.
func (c *programCache) checked(digest, src string, limits rules.Limits) (*rules.Program, error) {
	c.mu.Lock()
	p, ok := c.byDigest[digest]
	c.mu.Unlock()
	if ok && p.Within(limits) {
		return p, nil
	}
	p, err := limits.Check(src)
	if err != nil {
		return nil, err
	}
	if err := checkPathConflicts(p); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byDigest[digest]; !ok {
		if len(c.order) == programCacheSize {
			delete(c.byDigest, c.order[0])
			c.order = c.order[1:]
		}
		c.byDigest[digest] = p
		c.order = append(c.order, digest)
	}
	return p, nil
}
