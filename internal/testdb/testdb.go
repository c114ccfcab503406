// Package testdb gives each test its own migrated Postgres schema, so tests
// that run real River workers (which commit) can run in parallel without
// seeing each other's jobs. The database comes from TEST_DATABASE_URL
// (default: the local Postgres on 127.0.0.1:5432, database postgres).
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/migrations"
)

// DefaultURL is used when TEST_DATABASE_URL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// URL returns the test database URL.
func URL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Options adjust the pool New returns.
type Options struct {
	// LeaseSeconds sets bpc.lease_seconds on every connection (default 60).
	LeaseSeconds int
	// MaxConns bounds the pool (default 20).
	MaxConns int32
	// Migrate chooses what is applied: MigrateAll (default), MigrateRiver or MigrateNone.
	Migrate MigrateMode
	// Params are further run-time parameters set on every connection.
	Params map[string]string
	// Tracer traces every connection's queries (RoundTrips counts them).
	Tracer pgx.QueryTracer
}

// MigrateMode selects the migrations NewWithOptions applies.
type MigrateMode int

// Migration modes.
const (
	MigrateAll MigrateMode = iota
	MigrateRiver
	MigrateNone
)

// New creates a fresh schema with every migration applied and returns a pool
// whose connections use it; the schema is dropped when the test ends.
func New(t testing.TB) *pgxpool.Pool {
	return NewWithOptions(t, Options{})
}

// EmptySchema creates a schema dropped when the test ends and returns its
// name and a database URL whose search_path is that schema.
func EmptySchema(t testing.TB) (string, string) {
	t.Helper()
	ctx := context.Background()
	schema := "t_" + randomHex(6)
	admin, err := pgxpool.New(ctx, URL())
	require.NoError(t, err, "connect to TEST_DATABASE_URL (%s)", URL())
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		admin.Close()
	})
	u, err := url.Parse(URL())
	require.NoError(t, err, "TEST_DATABASE_URL must be a postgres:// URL")
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return schema, u.String()
}

// NewWithOptions is New with options.
func NewWithOptions(t testing.TB, o Options) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	_, schemaURL := EmptySchema(t)
	cfg, err := pgxpool.ParseConfig(schemaURL)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["application_name"] = "bpc-test"
	if o.LeaseSeconds > 0 {
		cfg.ConnConfig.RuntimeParams["bpc.lease_seconds"] = strconv.Itoa(o.LeaseSeconds)
	}
	for k, v := range o.Params {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	cfg.ConnConfig.Tracer = o.Tracer
	cfg.MaxConns = 20
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	switch o.Migrate {
	case MigrateAll:
		require.NoError(t, migrations.Up(ctx, pool, logger))
	case MigrateRiver:
		require.NoError(t, migrations.UpRiver(ctx, pool, logger))
	}
	return pool
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
