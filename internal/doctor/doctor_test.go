package doctor_test

import (
	"bytes"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/doctor"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/store"
)

// A tampered audit chain is a finding: the report names the tenant and the
// event, is not OK, and its text does not end in "all good".
func TestCheckReportsABrokenAuditChain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testdb.New(t)

	rep, err := doctor.Check(ctx, pool)
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep)
	require.Equal(t, "schema is current", rep.Schema)
	require.Regexp(t, `^ok \(\d+ events\)$`, rep.AuditChains["dev"])
	var text bytes.Buffer
	rep.WriteText(&text)
	require.Contains(t, text.String(), "0 drift(s)\n")
	require.Contains(t, text.String(), "audit chain:  dev ok (")
	require.Contains(t, text.String(), "\nall good\n")

	// An event that claims a predecessor its aggregate does not have.
	eventID := uuid.New()
	_, err = pool.Exec(ctx, `INSERT INTO events (event_id, tenant_id, aggregate_type, aggregate_id,
			aggregate_version, event_type, occurred_at, payload, payload_hash, event_hash)
		VALUES ($1, $2, 'Passport', $3, 2, 'passport.tampered', now(), '\x7b7d', 'x', 'tampered-hash')`,
		eventID, store.DevTenantID, uuid.New())
	require.NoError(t, err)

	rep, err = doctor.Check(ctx, pool)
	require.NoError(t, err)
	require.False(t, rep.OK)
	require.Equal(t, "BROKEN: event "+eventID.String()+": aggregate version 2, expected 1", rep.AuditChains["dev"])
	text.Reset()
	rep.WriteText(&text)
	require.Contains(t, text.String(), "audit chain:  dev BROKEN: event "+eventID.String())
	require.NotContains(t, text.String(), "all good")
}

// A read URL that reaches the primary itself (a second pool on the same
// database) is no replica: the report says so and is not OK, as the
// service reads the primary instead. Internal/replicatest shows a real
// standby's report.
func TestCheckReplicaReportsThePrimaryItself(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	again, err := pgxpool.NewWithConfig(t.Context(), pool.Config())
	require.NoError(t, err)
	t.Cleanup(again.Close)

	rr, err := doctor.CheckReplica(t.Context(), pool, again)
	require.NoError(t, err)
	require.Equal(t, doctor.ReplicaReport{Reachable: true, SameCluster: true, PrimaryItself: true}, rr)
	rep := doctor.Report{OK: true}
	rep.AddReplica(rr)
	require.False(t, rep.OK)
	var text bytes.Buffer
	rep.WriteText(&text)
	require.Contains(t, text.String(), "read replica: NOT a replica: BPC_DATABASE_READ_URL reaches the primary itself")
	require.NotContains(t, text.String(), "all good")
}
