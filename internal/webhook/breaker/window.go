package breaker

import (
	"time"

	"github.com/bpc-platform/bpc/bpctype"
)

// Window counts an endpoint's recent delivery attempts and failures in a
// ring of time buckets: slot i counts the attempts whose time falls in
// bucket Buckets[i] (unix milliseconds / bucket width). Totals covers the
// current bucket and the len-1 before it, so the window slides at bucket
// granularity. It is a value: Record returns a new window. It is stored as
// a bpctype.BreakerWindow, to which it converts.
type Window bpctype.BreakerWindow

// NewWindow returns an empty window of length split into buckets slots (at
// least 1 ms each).
func NewWindow(length time.Duration, buckets int) Window {
	buckets = max(buckets, 1)
	width := max((length / time.Duration(buckets)).Truncate(time.Millisecond), time.Millisecond)
	w := Window{
		BucketWidth: width,
		Buckets:     make([]int64, buckets),
		Attempts:    make([]int32, buckets),
		Failures:    make([]int32, buckets),
	}
	for i := range w.Buckets {
		w.Buckets[i] = -1 // counts nothing
	}
	return w
}

// Fits reports whether the window has the shape NewWindow(length, buckets)
// gives; a window of another shape (configuration changed) is replaced
// rather than reinterpreted.
func (w Window) Fits(length time.Duration, buckets int) bool {
	want := NewWindow(length, buckets)
	return w.BucketWidth == want.BucketWidth && len(w.Buckets) == len(want.Buckets) &&
		len(w.Attempts) == len(w.Buckets) && len(w.Failures) == len(w.Buckets)
}

// Length is the time the window covers.
func (w Window) Length() time.Duration { return w.BucketWidth * time.Duration(len(w.Buckets)) }

func (w Window) bucketAt(t time.Time) int64 {
	return t.UnixMilli() / max(w.BucketWidth.Milliseconds(), 1)
}

// Totals returns the attempts and failures counted in the window ending at
// now. Buckets from the future (a clock behind another worker's) count too,
// so that skew between hosts does not hide failures.
func (w Window) Totals(now time.Time) (attempts, failures int) {
	if len(w.Buckets) == 0 || len(w.Attempts) != len(w.Buckets) || len(w.Failures) != len(w.Buckets) {
		return 0, 0
	}
	cur := w.bucketAt(now)
	oldest := cur - int64(len(w.Buckets)) + 1
	for i, b := range w.Buckets {
		if b >= oldest && b >= 0 {
			attempts += int(w.Attempts[i])
			failures += int(w.Failures[i])
		}
	}
	return attempts, failures
}

// Record returns the window with one attempt at now counted (and a failure
// when failure is true).
func (w Window) Record(now time.Time, failure bool) Window {
	out := Window{
		BucketWidth: w.BucketWidth,
		Buckets:     append([]int64(nil), w.Buckets...),
		Attempts:    append([]int32(nil), w.Attempts...),
		Failures:    append([]int32(nil), w.Failures...),
	}
	if len(out.Buckets) == 0 {
		return out
	}
	cur := out.bucketAt(now)
	slot := int(((cur % int64(len(out.Buckets))) + int64(len(out.Buckets))) % int64(len(out.Buckets)))
	if out.Buckets[slot] != cur {
		out.Buckets[slot], out.Attempts[slot], out.Failures[slot] = cur, 0, 0
	}
	out.Attempts[slot]++
	if failure {
		out.Failures[slot]++
	}
	return out
}

// View is what the API shows of a breaker.
type View struct {
	State            string     `json:"state"`
	FailureRate      float64    `json:"failure_rate"`
	AttemptsInWindow int        `json:"attempts_in_window"`
	FailuresInWindow int        `json:"failures_in_window"`
	OpenedAt         *time.Time `json:"opened_at"`
	NextProbeAt      *time.Time `json:"next_probe_at"`
}

// ViewOf returns b as of now: the window's totals age as time passes.
func ViewOf(b bpctype.WebhookBreaker, now time.Time) View {
	v := View{State: b.State, OpenedAt: b.OpenedAt, NextProbeAt: b.NextProbeAt}
	if v.State == "" {
		v.State = bpctype.BreakerClosed
	}
	v.AttemptsInWindow, v.FailuresInWindow = Window(b.Window).Totals(now)
	if v.AttemptsInWindow > 0 {
		v.FailureRate = float64(v.FailuresInWindow) / float64(v.AttemptsInWindow)
	}
	return v
}
