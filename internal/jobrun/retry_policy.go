package jobrun

import (
	"time"

	"github.com/riverqueue/river/rivertype"
)

// maxBackoffUnits caps the exponential backoff (SPEC §3: min(1024, 2^attempt)).
const maxBackoffUnits = 1024

// RetryPolicy schedules retry n after min(1024, 2^n) × Unit: with the default
// unit of one second, 2, 4, 8, 16 s for attempts 1–4.
type RetryPolicy struct {
	Unit time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Delay returns the backoff after the given failed attempt (1-based).
func (p *RetryPolicy) Delay(attempt int) time.Duration {
	units := maxBackoffUnits
	if attempt < 10 {
		units = 1 << max(attempt, 0)
	}
	return time.Duration(units) * p.Unit
}

// NextRetry implements river.ClientRetryPolicy.
func (p *RetryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	return now().Add(p.Delay(job.Attempt))
}
