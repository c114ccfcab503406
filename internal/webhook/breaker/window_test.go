package breaker_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/webhook/breaker"
)

func TestBreakerWindowSlidesAndAges(t *testing.T) {
	t.Parallel()
	t0 := time.UnixMilli(1_700_000_000_000) // on a bucket boundary
	w := breaker.NewWindow(10*time.Second, 10)
	require.Equal(t, time.Second, w.BucketWidth)
	require.Equal(t, 10*time.Second, w.Length())
	require.True(t, w.Fits(10*time.Second, 10))
	require.False(t, w.Fits(20*time.Second, 10))
	require.False(t, w.Fits(10*time.Second, 5))
	a, f := w.Totals(t0)
	require.Zero(t, a)
	require.Zero(t, f)

	w2 := w.Record(t0, true)
	require.Equal(t, []int32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, w.Attempts, "Record does not change its receiver")
	w2 = w2.Record(t0.Add(500*time.Millisecond), false)
	w2 = w2.Record(t0.Add(3*time.Second), true)
	a, f = w2.Totals(t0.Add(3 * time.Second))
	require.Equal(t, 3, a)
	require.Equal(t, 2, f)

	// 9.999 s later the first bucket still counts; at 10 s it has left.
	a, f = w2.Totals(t0.Add(9*time.Second + 999*time.Millisecond))
	require.Equal(t, 3, a)
	require.Equal(t, 2, f)
	a, f = w2.Totals(t0.Add(10 * time.Second))
	require.Equal(t, 1, a)
	require.Equal(t, 1, f)
	a, _ = w2.Totals(t0.Add(13 * time.Second))
	require.Zero(t, a)

	// A slot is reused for a later bucket: its old counts are dropped.
	w3 := w2.Record(t0.Add(10*time.Second), false)
	a, f = w3.Totals(t0.Add(10 * time.Second))
	require.Equal(t, 2, a, "the 3 s failure and the new success")
	require.Equal(t, 1, f)

	// A window too short for its buckets gets 1 ms buckets.
	tiny := breaker.NewWindow(time.Millisecond, 10)
	require.Equal(t, time.Millisecond, tiny.BucketWidth)
}
