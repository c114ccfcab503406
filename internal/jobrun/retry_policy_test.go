package jobrun_test

import (
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/jobrun"
)

func TestRetryPolicyDelayDoublesPerAttemptAndCapsAt1024Units(t *testing.T) {
	t.Parallel()
	unit := 25 * time.Millisecond
	p := &jobrun.RetryPolicy{Unit: unit}
	tests := []struct {
		attempt int
		units   int
	}{
		{1, 2}, {2, 4}, {3, 8}, {4, 16}, {5, 32}, {9, 512},
		{10, 1024}, {11, 1024}, {25, 1024}, {100, 1024}, {1 << 20, 1024},
	}
	for _, tt := range tests {
		require.Equal(t, time.Duration(tt.units)*unit, p.Delay(tt.attempt), "attempt %d", tt.attempt)
	}
}

func TestRetryPolicyDefaultUnitGivesSpecSeconds(t *testing.T) {
	t.Parallel()
	p := &jobrun.RetryPolicy{Unit: time.Second}
	require.Equal(t,
		[]time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second},
		[]time.Duration{p.Delay(1), p.Delay(2), p.Delay(3), p.Delay(4)})
	require.Equal(t, 1024*time.Second, p.Delay(12))
}

func TestRetryPolicyDelayNeverNegativeForOddAttempts(t *testing.T) {
	t.Parallel()
	p := &jobrun.RetryPolicy{Unit: time.Second}
	require.Equal(t, time.Second, p.Delay(0))
	require.Equal(t, time.Second, p.Delay(-3))
}

func TestRetryPolicyNextRetryUsesClock(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := &jobrun.RetryPolicy{Unit: time.Second, Now: func() time.Time { return now }}
	require.Equal(t, now.Add(2*time.Second), p.NextRetry(&rivertype.JobRow{Attempt: 1}))
	require.Equal(t, now.Add(16*time.Second), p.NextRetry(&rivertype.JobRow{Attempt: 4}))
	require.Equal(t, now.Add(1024*time.Second), p.NextRetry(&rivertype.JobRow{Attempt: 30}))
}

func TestRetryPolicyNextRetryWithoutClockIsInTheFuture(t *testing.T) {
	t.Parallel()
	p := &jobrun.RetryPolicy{Unit: time.Minute}
	before := time.Now()
	got := p.NextRetry(&rivertype.JobRow{Attempt: 1})
	require.WithinRange(t, got, before.Add(2*time.Minute), time.Now().Add(2*time.Minute))
}
