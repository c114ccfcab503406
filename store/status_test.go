package store_test

import (
	"testing"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/testdb"
)

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
			require.Equal(t, sql, bpctype.StatusOf(state, bpctype.CancelledByOperator([]byte(meta))), "%s with metadata %s", state, meta)
		}
	}
}
