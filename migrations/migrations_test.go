package migrations_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/migrations"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestAllIsOrderedAndNamed(t *testing.T) {
	t.Parallel()
	all, err := migrations.All()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(all), 4)
	for i, m := range all {
		require.Equal(t, i+1, m.Version, "versions are contiguous from 1")
		require.NotEmpty(t, m.SQL)
		require.Regexp(t, `^\d{3}_[a-z_]+$`, m.Name)
	}
}

func TestUpFromEmptyIsIdempotentAndSafeConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, url := testdb.EmptySchema(t)
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer pool.Close()

	st, err := migrations.Check(ctx, pool)
	require.NoError(t, err)
	require.False(t, st.Current())
	require.True(t, st.RiverPending)
	all, err := migrations.All()
	require.NoError(t, err)
	require.Len(t, st.Pending, len(all))
	require.Contains(t, st.String(), "001_tenants")

	// Several replicas starting at once: the advisory lock serialises them.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = migrations.Up(ctx, pool, quiet)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	st, err = migrations.Check(ctx, pool)
	require.NoError(t, err)
	require.True(t, st.Current(), st.String())
	require.Equal(t, "schema is current", st.String())

	var applied int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM bpc_schema_migrations").Scan(&applied))
	require.Equal(t, len(all), applied)
	var tenants int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM tenants WHERE slug IN ('dev', 'system')").Scan(&tenants))
	require.Equal(t, 2, tenants, "seeded once")

	// A version recorded by a newer binary is reported, not fatal.
	_, err = pool.Exec(ctx, "INSERT INTO bpc_schema_migrations (version, name) VALUES (999, '999_future')")
	require.NoError(t, err)
	st, err = migrations.Check(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, []int{999}, st.Unknown)
}

func TestPassportArtifactsAreCompressedWithLZ4(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ctx := context.Background()
	var lz4 bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_settings
		WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals))`).Scan(&lz4))
	if !lz4 {
		t.Skip("this Postgres is built without lz4: the migration keeps pglz")
	}
	rows, err := pool.Query(ctx, `SELECT attname, attcompression FROM pg_attribute
		WHERE attrelid = 'passport_versions'::regclass AND attname IN ('payload', 'proof') ORDER BY attname`)
	require.NoError(t, err)
	got := map[string]string{}
	for rows.Next() {
		var name, method string
		require.NoError(t, rows.Scan(&name, &method))
		got[name] = method
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]string{"payload": "l", "proof": "l"}, got)
}
