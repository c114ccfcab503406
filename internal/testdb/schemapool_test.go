package testdb

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/migrations"
)

// schemaState is what a test could observe of a schema's contents: every
// table's rows (timestamps aside) and every sequence's position.
func schemaState(t *testing.T, conn interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}, schema string) map[string]string {
	t.Helper()
	ctx := t.Context()
	rows, err := conn.Query(ctx, `SELECT relname FROM pg_class
		WHERE relnamespace = to_regnamespace($1) AND relkind IN ('r', 'p') ORDER BY relname`, schema)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.NotEmpty(t, tables)
	state := map[string]string{}
	for _, table := range tables {
		// Rows as JSON without the columns that a clock fills.
		var rowsJSON string
		require.NoError(t, conn.QueryRow(ctx, `SELECT COALESCE(json_agg(r ORDER BY r::text)::text, '[]') FROM (
			SELECT to_jsonb(t) - 'created_at' - 'applied_at' - 'updated_at' AS r FROM `+
			pgx.Identifier{schema, table}.Sanitize()+` t) s`).Scan(&rowsJSON))
		state["table "+table] = rowsJSON
	}
	rows, err = conn.Query(ctx, `SELECT sequencename, COALESCE(last_value::text, 'unused')
		FROM pg_sequences WHERE schemaname = $1`, schema)
	require.NoError(t, err)
	for rows.Next() {
		var name, last string
		require.NoError(t, rows.Scan(&name, &last))
		state["sequence "+name] = last
	}
	require.NoError(t, rows.Err())
	return state
}

// dirty writes what tests write: a tenant, a River job through the mirror
// (live, then history), an audit event, a paused queue, a leader, and
// sequence values.
func dirty(t *testing.T, conn *pgx.Conn, schema string) {
	t.Helper()
	_, err := conn.Exec(t.Context(), fmt.Sprintf(`SET search_path TO %s;
		INSERT INTO tenants (slug, name) VALUES ('dirt', 'Dirt');
		INSERT INTO river_job (args, kind, max_attempts, state, metadata)
			VALUES ('{}', 'noop', 3, 'available', '{}'), ('{}', 'noop', 3, 'available', '{}');
		DELETE FROM river_job WHERE id = (SELECT min(id) FROM river_job);
		INSERT INTO events (event_id, tenant_id, aggregate_type, aggregate_id, aggregate_version, event_type,
			occurred_at, payload, payload_hash, event_hash)
			VALUES (gen_random_uuid(), '00000000-0000-0000-0000-00000000de00', 'passport', gen_random_uuid(), 1,
				'passport.created', now(), '\x7b7d', 'h', 'e');
		INSERT INTO river_queue (name, created_at, metadata, paused_at, updated_at)
			VALUES ('default', now(), '{}', now(), now());
		INSERT INTO river_leader (elected_at, expires_at, leader_id) VALUES (now(), now() + interval '1 hour', 'x');
		SET search_path TO DEFAULT`, pgx.Identifier{schema}.Sanitize()))
	require.NoError(t, err)
}

func TestResetLeavesThePooledSchemaAsAFreshMigrationDoes(t *testing.T) {
	ctx := t.Context()

	// A fresh migration, as the reference.
	_, freshURL := EmptySchema(t)
	fresh, err := pgxpool.New(ctx, freshURL)
	require.NoError(t, err)
	t.Cleanup(fresh.Close)
	require.NoError(t, migrations.Up(ctx, fresh, slog.New(slog.NewTextHandler(io.Discard, nil))))
	var freshSchema string
	require.NoError(t, fresh.QueryRow(ctx, `SELECT current_schema()`).Scan(&freshSchema))
	want := schemaState(t, fresh, freshSchema)
	require.Contains(t, want["table tenants"], `"slug": "dev"`, "the migrations seed the dev tenant")

	held, err := acquireSchema(ctx, t, MigrateAll)
	require.NoError(t, err)
	t.Cleanup(func() { held.release(t) })
	require.Equal(t, want, schemaState(t, held.conn, held.name), "a pooled schema when acquired")

	dirty(t, held.conn, held.name)
	dirtied := schemaState(t, held.conn, held.name)
	require.NotEqual(t, want["table jobs_history"], dirtied["table jobs_history"], "the deleted job moved to the history")
	require.NotEqual(t, want["sequence river_job_id_seq"], dirtied["sequence river_job_id_seq"])

	require.NoError(t, held.reset(ctx))
	require.Equal(t, want, schemaState(t, held.conn, held.name), "a pooled schema after its reset")
}

func TestAHeldSchemaIsNotHandedOutUntilItsConnectionEnds(t *testing.T) {
	ctx := t.Context()
	first, err := acquireSchema(ctx, t, MigrateRiver)
	require.NoError(t, err)
	second, err := acquireSchema(ctx, t, MigrateRiver)
	require.NoError(t, err)
	t.Cleanup(func() { second.release(t) })
	require.NotEqual(t, first.name, second.name)

	other, err := connectLocker(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	locked, err := tryLock(ctx, other, first.name)
	require.NoError(t, err)
	require.False(t, locked, "held by first")

	// A test process that dies closes its connections; the server ends the
	// backend, and its locks, a moment later.
	require.NoError(t, first.conn.Close(ctx))
	require.Eventually(t, func() bool {
		locked, err = tryLock(ctx, other, first.name)
		require.NoError(t, err)
		return locked
	}, 10*time.Second, 10*time.Millisecond, "free once first's connection is gone")
	require.NoError(t, unlock(ctx, other, first.name))
}

func TestASchemaWhoseDefinitionChangedIsDroppedNotReused(t *testing.T) {
	ctx := t.Context()
	held, err := acquireSchema(ctx, t, MigrateAll)
	require.NoError(t, err)
	_, err = held.conn.Exec(ctx, `ALTER TABLE `+held.qualified("river_job")+` DISABLE TRIGGER bpc_mirror_insert`)
	require.NoError(t, err)
	require.Error(t, held.reset(ctx), "reset refuses a changed definition")

	other, err := connectLocker(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	held.release(t)
	var exists bool
	require.NoError(t, other.QueryRow(ctx, `SELECT to_regnamespace($1) IS NOT NULL`, held.name).Scan(&exists))
	require.False(t, exists, "dropped at release")
}

func TestHalfMigratedAndStaleSchemasAreDropped(t *testing.T) {
	ctx := t.Context()
	prefix, err := poolPrefix(MigrateRiver)
	require.NoError(t, err)
	conn, err := connectLocker(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })

	// Sorted first among the set's schemas, and without the comment a
	// finished migration writes.
	half := prefix + "0000half"
	stale := "tp_r00000000000000_" + randomHex(4)
	staleHeld := "tp_r00000000000000_" + randomHex(4)
	for _, s := range []string{half, stale, staleHeld} {
		_, err = conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{s}.Sanitize())
		require.NoError(t, err)
		t.Cleanup(func() { _ = dropSchema(context.Background(), conn, s) })
	}
	holder, err := connectLocker(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = holder.Close(context.Background()) })
	locked, err := tryLock(ctx, holder, staleHeld)
	require.NoError(t, err)
	require.True(t, locked)

	held, err := acquireSchema(ctx, t, MigrateRiver)
	require.NoError(t, err)
	t.Cleanup(func() { held.release(t) })
	require.NotEqual(t, half, held.name)

	require.NoError(t, sweepStale(ctx, conn))
	exists := func(s string) bool {
		var ok bool
		require.NoError(t, conn.QueryRow(ctx, `SELECT to_regnamespace($1) IS NOT NULL`, s).Scan(&ok))
		return ok
	}
	require.False(t, exists(half), "a half-migrated schema is dropped when found")
	require.False(t, exists(stale), "a schema of another migration set is swept")
	require.True(t, exists(staleHeld), "a schema another process holds is left alone")
	require.True(t, exists(held.name))
}

func TestASchemaWhoseMigrationRecordsChangedIsNotReused(t *testing.T) {
	ctx := t.Context()
	held, err := acquireSchema(ctx, t, MigrateAll)
	require.NoError(t, err)
	t.Cleanup(func() { held.release(t) })
	_, err = held.conn.Exec(ctx, `DELETE FROM `+held.qualified("bpc_schema_migrations")+` WHERE version = 12`)
	require.NoError(t, err)
	require.Error(t, held.reset(ctx), "a schema that looks behind is not handed out as current")
}
