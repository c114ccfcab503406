// Package testdb gives each test its own migrated Postgres schema, so tests
// that run real River workers (which commit) can run in parallel without
// seeing each other's jobs. Migrated schemas are pooled across tests and test
// processes, as River's riverdbtest does: a test holds one exclusively, finds
// it as freshly migrated and leaves it for the next. Resetting a pooled
// schema needs a superuser (it runs as a replica would). The database comes
// from TEST_DATABASE_URL (default: the local Postgres on 127.0.0.1:5432,
// database postgres).
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
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
	// Fresh gives the test a newly migrated schema of its own, dropped at
	// the end, instead of a pooled one: for a test whose harm to the schema
	// the pool cannot see, such as terminating backends. A test that only
	// changes the schema's definition needs no Fresh: the pool drops such a
	// schema instead of reusing it. Benchmarks always get fresh schemas, so
	// that table and function statistics start from zero.
	Fresh bool
	// SchemaNameBytes, when more than the usual 14, pads the name of a
	// fresh schema (implied) with x's to that many bytes, at most 63
	// (Postgres' identifiers): for a test of what a long name does.
	SchemaNameBytes int
}

// MigrateMode selects the migrations NewWithOptions applies.
type MigrateMode int

// Migration modes.
const (
	MigrateAll MigrateMode = iota
	MigrateRiver
	MigrateNone
)

// New returns a pool whose connections use a schema with every migration
// applied and no rows but those the migrations seed, held by the test until
// it ends.
func New(t testing.TB) *pgxpool.Pool {
	return NewWithOptions(t, Options{})
}

// EmptySchema creates a schema dropped when the test ends and returns its
// name and a database URL whose search_path is that schema.
func EmptySchema(t testing.TB) (string, string) {
	t.Helper()
	return emptySchema(t, 0)
}

// emptySchema is EmptySchema, its name padded to nameBytes (sweepStale
// knows such names too).
func emptySchema(t testing.TB, nameBytes int) (string, string) {
	t.Helper()
	ctx := context.Background()
	schema := "t_" + randomHex(6)
	if nameBytes > len(schema)+1 {
		require.LessOrEqual(t, nameBytes, 63, "Postgres' identifiers are at most 63 bytes")
		schema += "_" + strings.Repeat("x", nameBytes-len(schema)-1)
	}
	conn, err := connectLocker(ctx)
	require.NoError(t, err)
	// Held so that another process's sweep never drops it under the test.
	locked, err := tryLock(ctx, conn, schema)
	require.NoError(t, err)
	require.True(t, locked, "new schema %s is locked already", schema)
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = dropSchema(context.Background(), conn, schema)
		_ = conn.Close(context.Background())
	})
	u, err := urlWithSearchPath(schema)
	require.NoError(t, err)
	return schema, u
}

// NewWithOptions is New with options.
func NewWithOptions(t testing.TB, o Options) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	var schemaURL string
	_, bench := t.(*testing.B)
	fresh := o.Fresh || bench || o.Migrate == MigrateNone || o.SchemaNameBytes > 0
	if fresh {
		_, schemaURL = emptySchema(t, o.SchemaNameBytes)
	} else {
		held, err := acquireSchema(ctx, t, o.Migrate)
		require.NoError(t, err)
		t.Cleanup(func() { held.release(t) })
		schemaURL, err = urlWithSearchPath(held.name)
		require.NoError(t, err)
	}
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
	if !fresh {
		return pool
	}

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	switch o.Migrate {
	case MigrateAll:
		require.NoError(t, migrations.Up(ctx, pool, logger))
	case MigrateRiver:
		require.NoError(t, migrations.UpRiver(ctx, pool, logger))
	}
	return pool
}

// urlWithSearchPath returns the test database URL with search_path set to
// schema.
func urlWithSearchPath(schema string) (string, error) {
	u, err := url.Parse(URL())
	if err != nil {
		return "", fmt.Errorf("TEST_DATABASE_URL must be a postgres:// URL: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
