package fairfetch

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/store"
)

// A fetched row that cannot be decoded has already been moved to running:
// it is returned, with its decode error, so that River fails the attempt
// instead of leaving the job running with no worker. The database cannot
// hold such a row (jsonb is valid JSON), so the row is built here.
func TestDecodeKeepsUndecodableRows(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	res := decode([]store.FetchedRiverJob{
		{ID: 1, Kind: "K", State: "running", Attempt: 1, AttemptedAt: &at, CreatedAt: at, ScheduledAt: at,
			Errors:       [][]byte{[]byte(`{"at":"2030-01-01T00:00:00Z","attempt":1,"error":"e","trace":""}`)},
			UniqueStates: pgtype.Bits{Bytes: []byte{0b0100_0001}, Len: 8, Valid: true}},
		{ID: 2, Kind: "K", State: "running", Errors: [][]byte{[]byte(`{`)}},
	})
	require.Len(t, res.Jobs, 2)
	first := res.Jobs[0]
	require.Equal(t, time.UTC, first.AttemptedAt.Location())
	require.True(t, at.Equal(*first.AttemptedAt))
	require.Equal(t, rivertype.JobStateRunning, first.State)
	require.Equal(t, []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStateRunning}, first.UniqueStates)
	require.Equal(t, "e", first.Errors[0].Error)

	require.Equal(t, int64(2), res.Jobs[1].ID)
	require.Nil(t, res.Jobs[1].Errors)
	require.Len(t, res.DecodeErrors, 1)
	require.ErrorContains(t, res.DecodeErrors[2], "errors")
}
