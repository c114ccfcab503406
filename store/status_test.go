package store_test

import (
	"testing"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/store"
)

// The table of SPEC §3.
func TestStatusOfMapsEveryRiverState(t *testing.T) {
	t.Parallel()
	spec := map[rivertype.JobState]string{
		rivertype.JobStateAvailable: store.StatusQueued, rivertype.JobStateScheduled: store.StatusQueued,
		rivertype.JobStatePending: store.StatusQueued, rivertype.JobStateRetryable: store.StatusQueued,
		rivertype.JobStateRunning: store.StatusRunning, rivertype.JobStateCompleted: store.StatusSucceeded,
		rivertype.JobStateCancelled: store.StatusFailed, rivertype.JobStateDiscarded: store.StatusDeadLetter,
	}
	// A River upgrade that adds a state fails here until the SPEC says what it is.
	require.ElementsMatch(t, rivertype.JobStates(), keys(spec))
	for state, want := range spec {
		require.Equal(t, want, store.StatusOf(state, false), state)
	}
	require.Equal(t, store.StatusCancelled, store.StatusOf(rivertype.JobStateCancelled, true))
	require.Equal(t, store.StatusSucceeded, store.StatusOf(rivertype.JobStateCompleted, true), "only a cancelled job is CANCELLED")
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
		require.Equal(t, want, store.CancelledByOperator([]byte(meta)), meta)
	}
}

// The mirror's triggers map River states in SQL (bpc_ssot_status); Go code
// (the observer, bpc tick, the consistency check) uses StatusOf. They are
// one mapping: every River state, cancelled by an operator or not, gives
// the same status in both.
func TestStatusOfIsTheMirrorsMapping(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	metadata := []string{
		`{}`,
		`{"cancel_attempted_at":"2026-01-01T00:00:00Z"}`,
		`{"bpc_job_id":"aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa","cancel_attempted_at":"2026-01-01T00:00:00Z"}`,
		`{"bpc":{"cancel_attempted_at":"2026-01-01T00:00:00Z"}}`,
	}
	for _, state := range rivertype.JobStates() {
		for _, meta := range metadata {
			var sql string
			require.NoError(t, pool.QueryRow(t.Context(), `SELECT bpc_ssot_status($1::river_job_state::text, $2::jsonb)`, string(state), meta).Scan(&sql))
			require.Equal(t, sql, store.StatusOf(state, store.CancelledByOperator([]byte(meta))), "%s with metadata %s", state, meta)
		}
	}
}

func keys[K comparable, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
