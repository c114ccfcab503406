package api

import (
	"context"
	"sync"
	"time"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
)

// depthCacheTTL is how long a queue's measured depth is reused: enqueue
// bursts then cost one count per queue and TTL, not one per request.
const depthCacheTTL = 250 * time.Millisecond

// depthGate rejects enqueues into a queue whose available jobs exceed
// Config.MaxQueueDepth (BPC_QUEUE_MAX_DEPTH), so that a backlog cannot grow
// without bound when producers outpace the workers.
type depthGate struct {
	mu    sync.Mutex
	cache map[string]depthReading
}

type depthReading struct {
	depth int
	at    time.Time
}

// checkQueueDepth returns RATE_LIMITED (429, Retry-After) when any queue of
// args is above the limit; without a limit it does nothing.
func (s *Server) checkQueueDepth(ctx context.Context, args ...jobargs.Args) error {
	limit := s.Config.MaxQueueDepth
	if limit <= 0 {
		return nil
	}
	seen := map[string]bool{}
	for _, a := range args {
		q := a.InsertOpts().Queue
		if seen[q] {
			continue
		}
		seen[q] = true
		depth, err := s.queueDepth(ctx, q, limit)
		if err != nil {
			return err
		}
		if depth > limit {
			e := errcode.New(errcode.RateLimited, "queue %s holds more than %d available jobs; retry later", q, limit)
			e.Details = map[string]any{"queue": q, "max_depth": limit}
			return e
		}
	}
	return nil
}

// queueDepth counts the queue's available jobs, up to limit+1 (the count
// stops there, so a huge backlog costs no more than a full one).
func (s *Server) queueDepth(ctx context.Context, queue string, limit int) (int, error) {
	s.depth.mu.Lock()
	if r, ok := s.depth.cache[queue]; ok && time.Since(r.at) < depthCacheTTL {
		s.depth.mu.Unlock()
		return r.depth, nil
	}
	s.depth.mu.Unlock()
	depth, err := s.Store.CountAvailable(ctx, queue, limit+1)
	if err != nil {
		return 0, err
	}
	s.depth.mu.Lock()
	if s.depth.cache == nil {
		s.depth.cache = map[string]depthReading{}
	}
	s.depth.cache[queue] = depthReading{depth: depth, at: time.Now()}
	s.depth.mu.Unlock()
	return depth, nil
}
