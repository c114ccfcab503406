package store_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/store"
)

// readCount returns how many routed reads target served for reason.
func readCount(r *store.ReadRouter, target, reason string) int64 {
	var n int64
	r.Reads(func(tg, rs string, c int64) {
		if tg == target && rs == reason {
			n = c
		}
	})
	return n
}

// The router reads from the primary until its monitor has checked the
// replica; a "replica" that is not a standby (here a second pool on the
// same database: the primary itself, as an operator who points
// BPC_DATABASE_READ_URL at it has) is never trusted: reads stay on the
// primary, counted as replica_not_standby, and the route change is logged
// once, however many checks find it so. WithPrimary reads the primary
// whatever the replica's state. Internal/replicatest shows reads served by
// a real streaming replica.
func TestReadRouterDoesNotTrustAServerThatIsNotAStandby(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	replica, err := pgxpool.NewWithConfig(e.Ctx, e.Pool.Config())
	require.NoError(t, err)
	t.Cleanup(replica.Close)
	var logs bytes.Buffer
	router := store.NewReadRouter(e.Pool, replica, store.ReadRouterOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	reads := store.New(router)
	tenantID := e.OtherTenant(t)
	product, err := e.Store.CreateBatteryProduct(e.Ctx, tenantID, "SKU-RR", "Routed")
	require.NoError(t, err)

	target, reason := router.Route()
	require.Equal(t, []string{store.TargetPrimary, store.ReasonReplicaUnchecked}, []string{target, reason})
	list, err := reads.ListBatteryProducts(e.Ctx, tenantID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.EqualValues(t, 1, readCount(router, store.TargetPrimary, store.ReasonReplicaUnchecked))

	for range 3 {
		router.Check(e.Ctx)
	}
	target, reason = router.Route()
	require.Equal(t, []string{store.TargetPrimary, store.ReasonReplicaNotStandby}, []string{target, reason})
	list, err = reads.ListBatteryProducts(e.Ctx, tenantID)
	require.NoError(t, err)
	require.Equal(t, product.BatteryProductID, list[0].BatteryProductID)
	require.EqualValues(t, 1, readCount(router, store.TargetPrimary, store.ReasonReplicaNotStandby))
	require.Zero(t, readCount(router, store.TargetReplica, store.ReasonReplicaHealthy))
	require.Equal(t, 1, strings.Count(logs.String(), "not a standby"), logs.String())

	_, err = reads.ListBatteryProducts(store.WithPrimary(e.Ctx), tenantID)
	require.NoError(t, err)
	require.EqualValues(t, 1, readCount(router, store.TargetPrimary, store.ReasonPrimaryWanted))
}

// A replica the monitor cannot reach sends reads to the primary.
func TestReadRouterReadsThePrimaryWhileTheReplicaIsDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.Pool.Config()
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = "127.0.0.1", 1 // nothing listens on port 1
	cfg.ConnConfig.Fallbacks = nil
	replica, err := pgxpool.NewWithConfig(e.Ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(replica.Close)
	router := store.NewReadRouter(e.Pool, replica, store.ReadRouterOptions{})
	reads := store.New(router)

	router.Check(e.Ctx)
	target, reason := router.Route()
	require.Equal(t, []string{store.TargetPrimary, store.ReasonReplicaDown}, []string{target, reason})
	_, err = reads.ListTenants(e.Ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, readCount(router, store.TargetPrimary, store.ReasonReplicaDown))
}
