package bpctype_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
)

// The table of SPEC §3.
func TestStatusOfMapsEveryRiverState(t *testing.T) {
	t.Parallel()
	spec := map[rivertype.JobState]string{
		rivertype.JobStateAvailable: bpctype.StatusQueued, rivertype.JobStateScheduled: bpctype.StatusQueued,
		rivertype.JobStatePending: bpctype.StatusQueued, rivertype.JobStateRetryable: bpctype.StatusQueued,
		rivertype.JobStateRunning: bpctype.StatusRunning, rivertype.JobStateCompleted: bpctype.StatusSucceeded,
		rivertype.JobStateCancelled: bpctype.StatusFailed, rivertype.JobStateDiscarded: bpctype.StatusDeadLetter,
	}
	// A River upgrade that adds a state fails here until the SPEC says what it is.
	require.ElementsMatch(t, rivertype.JobStates(), slices.Collect(maps.Keys(spec)))
	for state, want := range spec {
		require.Equal(t, want, bpctype.StatusOf(state, false), state)
	}
	require.Equal(t, bpctype.StatusCancelled, bpctype.StatusOf(rivertype.JobStateCancelled, true))
	require.Equal(t, bpctype.StatusSucceeded, bpctype.StatusOf(rivertype.JobStateCompleted, true), "only a cancelled job is CANCELLED")
}

func TestCancelledByOperator(t *testing.T) {
	t.Parallel()
	for meta, want := range map[string]bool{
		`{"cancel_attempted_at":"2026-01-01T00:00:00Z"}`: true,
		`{"bpc_job_id":"x","cancel_attempted_at":null}`:  true,
		`{}`: false,
		``:   false,
		`{"bpc":{"cancel_attempted_at":"2026-01-01T00:00:00Z"}}`: false,
		`{"note":"\"cancel_attempted_at\" is not a key here"}`:   false,
		`{"cancel_attempted_at":"2026-01-01T00:00:00Z"`:          false,
	} {
		require.Equal(t, want, bpctype.CancelledByOperator([]byte(meta)), meta)
	}
}
