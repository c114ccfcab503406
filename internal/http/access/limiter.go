package access

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter is a token bucket per client (an API key id, or a client address):
// Rate requests a second on average, Burst at once. It is safe for
// concurrent use; a nil Limiter admits everything.
type Limiter struct {
	rate  rate.Limit
	burst int
	// max bounds the buckets held; see bucket.
	max int
	now func() time.Time

	mu       sync.Mutex
	buckets  map[string]*rate.Limiter
	overflow *rate.Limiter
	swept    time.Time
}

// NewLimiter returns a Limiter of rps requests a second and burst, or nil
// (no limit) when rps is not positive.
func NewLimiter(rps float64, burst int) *Limiter {
	if rps <= 0 {
		return nil
	}
	burst = max(burst, 1)
	return &Limiter{rate: rate.Limit(rps), burst: burst, max: 100000, now: time.Now,
		buckets: map[string]*rate.Limiter{}, overflow: rate.NewLimiter(rate.Limit(rps), burst)}
}

// Allow takes one request from client's bucket. When the bucket is empty it
// takes nothing and says how long until a request would be admitted.
func (l *Limiter) Allow(client string) (ok bool, retryAfter time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	b := l.bucket(client, now)
	r := b.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// Exhausted reports, without taking anything, whether client's bucket would
// refuse a request now, and for how long. It lets a caller refuse before
// doing work whose outcome decides whether the request counts (a failed
// credential lookup, say).
func (l *Limiter) Exhausted(client string) (bool, time.Duration) {
	if l == nil {
		return false, 0
	}
	now := l.now()
	l.mu.Lock()
	b, ok := l.buckets[client]
	l.mu.Unlock()
	if !ok {
		return false, 0
	}
	if t := b.TokensAt(now); t < 1 {
		return true, time.Duration((1 - t) / float64(l.rate) * float64(time.Second))
	}
	return false, 0
}

// RetryAfterSeconds is d as the whole seconds of a Retry-After header,
// rounded up and at least 1.
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// bucket returns client's bucket, making it on first use. A full bucket is
// the same as a new one, so when l holds max buckets the full ones are
// dropped (at most once a second); if none is full — max clients all in
// debt, as under a flood from many addresses — new clients share one
// overflow bucket until some recover.
func (l *Limiter) bucket(client string, now time.Time) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.buckets[client]; ok {
		return b
	}
	if len(l.buckets) >= l.max && now.Sub(l.swept) >= time.Second {
		l.swept = now
		for c, b := range l.buckets {
			if b.TokensAt(now) >= float64(l.burst) {
				delete(l.buckets, c)
			}
		}
	}
	if len(l.buckets) >= l.max {
		return l.overflow
	}
	b := rate.NewLimiter(l.rate, l.burst)
	l.buckets[client] = b
	return b
}
