package testdb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/bpc-platform/bpc/migrations"
)

// The schema pool, modelled on River's riverdbtest: migrating a schema costs
// far more than most tests that use it, so migrated schemas outlive the test
// (and the test process) and are handed to the next test that asks for the
// same migration set, emptied.
//
// A pooled schema is named tp_<set>_<random>, where <set> hashes the
// migrations applied (River's and ours) and the layout of the metadata below,
// so a schema is never reused under a different migration set and schemas of
// an older set are recognisably stale. Go test runs packages in parallel
// processes, so a schema is held through a session advisory lock taken on a
// connection of its own that lives as long as the test: Postgres releases it
// when that connection ends, so a crashed test process frees its schemas.
//
// The schema's comment holds, as JSON, what a fresh migration produced: the
// rows the migrations seed, the sequences' positions and a fingerprint of the
// catalog. A test that changed the schema's definition (disabled a trigger,
// altered a table) leaves a fingerprint that no longer matches, and the
// schema is dropped rather than reused. A schema without a comment was being
// migrated by a process that died, and is dropped too.

// lockClass is the first key of the two-key advisory locks that hold schemas
// ("bpct"); the second is hashtext of the schema's name. A hash collision
// only makes two schemas exclude each other, never share a holder.
const lockClass int32 = 0x62706374

// metaVersion changes whenever schemaMeta or the reset changes meaning, so
// that schemas prepared by an older testdb are not trusted.
const metaVersion = "4"

// resetLockTimeout bounds the wait for a pooled schema's tables: a schema
// still used by a leaked connection is given up, not waited for.
const resetLockTimeout = "5s"

// keptTables are the migration records, which a reset keeps.
var keptTables = map[string]bool{"river_migration": true, "bpc_schema_migrations": true}

// schemaMeta is what a fresh migration of a pooled schema produced, kept in
// the schema's comment.
type schemaMeta struct {
	Version     string                     `json:"version"`
	Fingerprint string                     `json:"fingerprint"`
	Tables      []string                   `json:"tables"`
	Kept        []string                   `json:"kept"`
	Seeds       map[string]json.RawMessage `json:"seeds"`
	Sequences   map[string]*int64          `json:"sequences"`
}

var (
	setPrefixesOnce sync.Once
	setPrefixes     map[MigrateMode]string
	setPrefixesErr  error
	sweepOnce       sync.Once
)

// poolPrefix returns the name prefix of mode's pooled schemas.
func poolPrefix(mode MigrateMode) (string, error) {
	setPrefixesOnce.Do(func() { setPrefixes, setPrefixesErr = computePrefixes() })
	if setPrefixesErr != nil {
		return "", setPrefixesErr
	}
	p, ok := setPrefixes[mode]
	if !ok {
		return "", fmt.Errorf("migration mode %d has no schema pool", mode)
	}
	return p, nil
}

func computePrefixes() (map[MigrateMode]string, error) {
	migrator, err := rivermigrate.New(riverpgxv5.New(nil), nil)
	if err != nil {
		return nil, fmt.Errorf("error creating River migrator: %w", err)
	}
	river := sha256.New()
	_, _ = io.WriteString(river, "testdb meta "+metaVersion+"\n")
	for _, m := range migrator.AllVersions() {
		_, _ = fmt.Fprintf(river, "river %d %s\n%s\n", m.Version, m.Name, m.SQLUp)
	}
	all := sha256.New()
	_, _ = all.Write(river.Sum(nil))
	ours, err := migrations.All()
	if err != nil {
		return nil, fmt.Errorf("error reading migrations: %w", err)
	}
	for _, m := range ours {
		_, _ = fmt.Fprintf(all, "bpc %d %s\n%s\n", m.Version, m.Name, m.SQL)
	}
	name := func(mode string, sum []byte) string {
		return "tp_" + mode + hex.EncodeToString(sum)[:14] + "_"
	}
	return map[MigrateMode]string{
		MigrateAll:   name("a", all.Sum(nil)),
		MigrateRiver: name("r", river.Sum(nil)),
	}, nil
}

// heldSchema is a schema a test holds until its cleanup.
type heldSchema struct {
	name string
	conn *pgx.Conn // holds the advisory lock
	meta schemaMeta
}

// acquireSchema returns a pooled schema migrated as mode, emptied, held by t
// until its cleanup.
func acquireSchema(ctx context.Context, t interface {
	Helper()
	Logf(string, ...any)
}, mode MigrateMode) (*heldSchema, error) {
	prefix, err := poolPrefix(mode)
	if err != nil {
		return nil, err
	}
	conn, err := connectLocker(ctx)
	if err != nil {
		return nil, err
	}
	sweepOnce.Do(func() {
		if err := sweepStale(ctx, conn); err != nil {
			t.Logf("testdb: stale schemas not swept: %v", err)
		}
	})
	held, err := reuseSchema(ctx, t, conn, prefix)
	if err == nil && held == nil {
		held, err = createSchema(ctx, conn, prefix, mode)
	}
	if err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return held, nil
}

// connectLocker opens the connection that holds a schema's lock and does the
// pool's own work, apart from the test's pool so that the test cannot close
// or exhaust it.
func connectLocker(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(URL())
	if err != nil {
		return nil, fmt.Errorf("error parsing TEST_DATABASE_URL: %w", err)
	}
	cfg.RuntimeParams["application_name"] = "bpc-testdb"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("error connecting to TEST_DATABASE_URL (%s): %w", URL(), err)
	}
	return conn, nil
}

func tryLock(ctx context.Context, conn *pgx.Conn, schema string) (bool, error) {
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext($2))`, lockClass, schema).Scan(&ok); err != nil {
		return false, fmt.Errorf("error locking schema %s: %w", schema, err)
	}
	return ok, nil
}

func unlock(ctx context.Context, conn *pgx.Conn, schema string) error {
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1, hashtext($2))`, lockClass, schema); err != nil {
		return fmt.Errorf("error unlocking schema %s: %w", schema, err)
	}
	return nil
}

// dropSchema drops schema, giving up rather than waiting without end on a
// connection a test leaked (a later sweep drops it).
func dropSchema(ctx context.Context, conn *pgx.Conn, schema string) error {
	if _, err := conn.Exec(ctx, "SET LOCAL lock_timeout = '30s'; "+
		"DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("error dropping schema %s: %w", schema, err)
	}
	return nil
}

// reuseSchema locks the first free schema of prefix that resets cleanly, or
// returns nil when there is none.
func reuseSchema(ctx context.Context, t interface{ Logf(string, ...any) }, conn *pgx.Conn, prefix string) (*heldSchema, error) {
	rows, err := conn.Query(ctx, `SELECT nspname, COALESCE(obj_description(oid, 'pg_namespace'), '')
		FROM pg_namespace WHERE starts_with(nspname, $1) ORDER BY nspname`, prefix)
	if err != nil {
		return nil, fmt.Errorf("error listing pooled schemas: %w", err)
	}
	type candidate struct{ name, comment string }
	candidates, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (candidate, error) {
		var c candidate
		return c, r.Scan(&c.name, &c.comment)
	})
	if err != nil {
		return nil, fmt.Errorf("error listing pooled schemas: %w", err)
	}
	for _, c := range candidates {
		locked, err := tryLock(ctx, conn, c.name)
		if err != nil {
			return nil, err
		}
		if !locked {
			continue
		}
		// The comment listed may predate the lock: read it again.
		var comment string
		if err := conn.QueryRow(ctx, `SELECT COALESCE(obj_description(oid, 'pg_namespace'), '')
			FROM pg_namespace WHERE nspname = $1`, c.name).Scan(&comment); err != nil {
			if !errors.Is(err, pgx.ErrNoRows) {
				return nil, fmt.Errorf("error reading schema %s: %w", c.name, err)
			}
			comment = "" // dropped meanwhile
		}
		held := &heldSchema{name: c.name, conn: conn}
		if comment == "" || json.Unmarshal([]byte(comment), &held.meta) != nil || held.meta.Version != metaVersion {
			// Half migrated by a process that died.
			if err := dropSchema(ctx, conn, c.name); err != nil {
				t.Logf("testdb: %v", err)
			}
			if err := unlock(ctx, conn, c.name); err != nil {
				return nil, err
			}
			continue
		}
		if err := held.reset(ctx); err != nil {
			// Dropped, so that a schema that cannot be reset does not make
			// every later test migrate a new one beside it.
			t.Logf("testdb: schema %s not reused: %v", c.name, err)
			if err := dropSchema(ctx, conn, c.name); err != nil {
				t.Logf("testdb: %v", err)
			}
			if err := unlock(ctx, conn, c.name); err != nil {
				return nil, err
			}
			continue
		}
		return held, nil
	}
	return nil, nil
}

// createSchema creates, migrates and describes a new pooled schema.
func createSchema(ctx context.Context, conn *pgx.Conn, prefix string, mode MigrateMode) (*heldSchema, error) {
	name := prefix + randomHex(4)
	locked, err := tryLock(ctx, conn, name)
	if err != nil {
		return nil, err
	}
	if !locked {
		return nil, fmt.Errorf("new schema %s is locked already", name)
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("error creating schema %s: %w", name, err)
	}
	if err := migrateSchema(ctx, name, mode); err != nil {
		return nil, err
	}
	held := &heldSchema{name: name, conn: conn}
	if err := held.describe(ctx); err != nil {
		return nil, err
	}
	comment, err := json.Marshal(held.meta)
	if err != nil {
		return nil, fmt.Errorf("error encoding schema %s's description: %w", name, err)
	}
	// COMMENT takes no parameters: quote the JSON as a literal.
	literal := "'" + strings.ReplaceAll(string(comment), "'", "''") + "'"
	if _, err := conn.Exec(ctx, "COMMENT ON SCHEMA "+pgx.Identifier{name}.Sanitize()+" IS "+literal); err != nil {
		return nil, fmt.Errorf("error marking schema %s ready: %w", name, err)
	}
	return held, nil
}

// migrateSchema applies mode's migrations to schema through a small pool of
// its own (the migrators take a pool).
func migrateSchema(ctx context.Context, schema string, mode MigrateMode) error {
	u, err := urlWithSearchPath(schema)
	if err != nil {
		return err
	}
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		return fmt.Errorf("error parsing TEST_DATABASE_URL: %w", err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "bpc-testdb"
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("error connecting to migrate schema %s: %w", schema, err)
	}
	defer pool.Close()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	switch mode {
	case MigrateAll:
		err = migrations.Up(ctx, pool, logger)
	case MigrateRiver:
		err = migrations.UpRiver(ctx, pool, logger)
	}
	if err != nil {
		return fmt.Errorf("error migrating schema %s: %w", schema, err)
	}
	return nil
}

// describe records what the fresh migration left in the schema: the tables a
// reset empties, the rows they hold now, the sequences' positions and the
// catalog's fingerprint.
func (h *heldSchema) describe(ctx context.Context) error {
	rows, err := h.conn.Query(ctx, `SELECT c.relname FROM pg_class c
		WHERE c.relnamespace = to_regnamespace($1) AND c.relkind IN ('r', 'p')
		ORDER BY c.relname`, h.name)
	if err != nil {
		return fmt.Errorf("error listing tables of %s: %w", h.name, err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("error listing tables of %s: %w", h.name, err)
	}
	h.meta = schemaMeta{Version: metaVersion, Seeds: map[string]json.RawMessage{}, Sequences: map[string]*int64{}}
	for _, table := range tables {
		if keptTables[table] {
			h.meta.Kept = append(h.meta.Kept, table)
			continue
		}
		h.meta.Tables = append(h.meta.Tables, table)
		var seed []byte
		if err := h.conn.QueryRow(ctx, `SELECT json_agg(t) FROM `+h.qualified(table)+` t`).Scan(&seed); err != nil {
			return fmt.Errorf("error reading the seed of %s.%s: %w", h.name, table, err)
		}
		if seed != nil {
			h.meta.Seeds[table] = seed
		}
	}
	rows, err = h.conn.Query(ctx, `SELECT sequencename, last_value FROM pg_sequences WHERE schemaname = $1`, h.name)
	if err != nil {
		return fmt.Errorf("error reading sequences of %s: %w", h.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var last *int64
		if err := rows.Scan(&name, &last); err != nil {
			return fmt.Errorf("error reading sequences of %s: %w", h.name, err)
		}
		h.meta.Sequences[name] = last
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("error reading sequences of %s: %w", h.name, err)
	}
	h.meta.Fingerprint, err = h.fingerprint(ctx)
	return err
}

func (h *heldSchema) qualified(name string) string {
	return pgx.Identifier{h.name, name}.Sanitize()
}

// reset empties the schema back to what its fresh migration left: rows
// deleted from every table that has any, the migrations' seed rows put back,
// sequences set back. Deleting from the few tables a test wrote is much
// cheaper than truncating them all (a new file per table and index). It runs
// as a replica would, so that foreign keys and ordinary triggers (the audit
// log's append-only guard) stay out of the way; the mirror's triggers fire
// even so, hence the passes until nothing is left. It refuses a schema whose
// definition a test changed.
func (h *heldSchema) reset(ctx context.Context) error {
	fp, err := h.fingerprint(ctx)
	if err != nil {
		return err
	}
	if fp != h.meta.Fingerprint {
		return fmt.Errorf("definition of schema %s changed since its migration", h.name)
	}
	return pgx.BeginFunc(ctx, h.conn, func(tx pgx.Tx) error {
		// Durability is of no use to a test schema: a lost reset is redone.
		if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '"+resetLockTimeout+"'; "+
			"SET LOCAL synchronous_commit = off; SET LOCAL session_replication_role = replica"); err != nil {
			return fmt.Errorf("error preparing the reset of %s: %w", h.name, err)
		}
		const passes = 3
		for pass := 0; ; pass++ {
			nonEmpty, err := h.nonEmptyTables(ctx, tx)
			if err != nil {
				return err
			}
			if len(nonEmpty) == 0 {
				break
			}
			if pass == passes {
				return fmt.Errorf("tables %v of %s still have rows after %d passes", nonEmpty, h.name, passes)
			}
			var batch strings.Builder
			for _, table := range nonEmpty {
				batch.WriteString("DELETE FROM " + h.qualified(table) + ";")
			}
			if _, err := tx.Exec(ctx, batch.String()); err != nil {
				return fmt.Errorf("error emptying schema %s: %w", h.name, err)
			}
		}
		for _, table := range h.meta.Tables {
			seed, ok := h.meta.Seeds[table]
			if !ok {
				continue
			}
			q := h.qualified(table)
			if _, err := tx.Exec(ctx, "INSERT INTO "+q+" SELECT * FROM json_populate_recordset(NULL::"+q+", $1)", string(seed)); err != nil {
				return fmt.Errorf("error restoring the seed of %s: %w", q, err)
			}
		}
		if len(h.meta.Sequences) > 0 {
			names := make([]string, 0, len(h.meta.Sequences))
			lasts := make([]*int64, 0, len(h.meta.Sequences))
			for seq, last := range h.meta.Sequences {
				names = append(names, h.qualified(seq))
				lasts = append(lasts, last)
			}
			// A sequence never used restarts at its start, unused again.
			if _, err := tx.Exec(ctx, `SELECT setval(s.seqrelid, COALESCE(v.last, s.seqstart), v.last IS NOT NULL)
				FROM unnest($1::text[], $2::bigint[]) AS v(name, last)
				JOIN pg_sequence s ON s.seqrelid = v.name::regclass`, names, lasts); err != nil {
				return fmt.Errorf("error restoring the sequences of %s: %w", h.name, err)
			}
		}
		return nil
	})
}

// nonEmptyTables returns the schema's tables that hold a row, in one round
// trip.
func (h *heldSchema) nonEmptyTables(ctx context.Context, tx pgx.Tx) ([]string, error) {
	if len(h.meta.Tables) == 0 {
		return nil, nil
	}
	parts := make([]string, len(h.meta.Tables))
	for i, table := range h.meta.Tables {
		parts[i] = fmt.Sprintf("SELECT %d AS i WHERE EXISTS (SELECT FROM %s)", i, h.qualified(table))
	}
	rows, err := tx.Query(ctx, strings.Join(parts, " UNION ALL "))
	if err != nil {
		return nil, fmt.Errorf("error finding the rows left in %s: %w", h.name, err)
	}
	indexes, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("error finding the rows left in %s: %w", h.name, err)
	}
	out := make([]string, len(indexes))
	for i, idx := range indexes {
		out[i] = h.meta.Tables[idx]
	}
	return out, nil
}

// fingerprintSQL hashes the definition of a schema's tables, columns,
// constraints, indexes, triggers (their enabled state included), functions,
// views, sequences, types and policies.
const fingerprintSQL = `
WITH ns AS (SELECT to_regnamespace($1) AS oid)
SELECT md5(COALESCE(string_agg(x, E'\n' ORDER BY x), '')) FROM (
  SELECT 'rel ' || c.relname || ' ' || c.relkind::text || ' ' || c.relrowsecurity || ' ' ||
         COALESCE(array_to_string(c.reloptions, ','), '')
    FROM pg_class c, ns WHERE c.relnamespace = ns.oid
  UNION ALL
  SELECT 'col ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' ||
         a.attnotnull || ' ' || a.attgenerated::text || ' ' || a.attidentity::text || ' ' || COALESCE(pg_get_expr(d.adbin, d.adrelid), '')
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum, ns
    WHERE c.relnamespace = ns.oid AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT 'con ' || co.conrelid::regclass::text || ' ' || co.conname || ' ' || pg_get_constraintdef(co.oid)
    FROM pg_constraint co, ns WHERE co.connamespace = ns.oid
  UNION ALL
  SELECT 'idx ' || pg_get_indexdef(i.indexrelid)
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid, ns WHERE c.relnamespace = ns.oid
  UNION ALL
  SELECT 'trg ' || tg.tgenabled::text || ' ' || pg_get_triggerdef(tg.oid)
    FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid, ns WHERE c.relnamespace = ns.oid AND NOT tg.tgisinternal
  UNION ALL
  SELECT 'fn ' || p.oid::regprocedure::text || ' ' || md5(COALESCE(p.prosrc, '')) || ' ' ||
         COALESCE(array_to_string(p.proconfig, ','), '') || ' ' || p.provolatile::text
    FROM pg_proc p, ns WHERE p.pronamespace = ns.oid
  UNION ALL
  SELECT 'view ' || c.relname || ' ' || pg_get_viewdef(c.oid)
    FROM pg_class c, ns WHERE c.relnamespace = ns.oid AND c.relkind IN ('v', 'm')
  UNION ALL
  SELECT 'seq ' || s.seqrelid::regclass::text || ' ' || s.seqstart || ' ' || s.seqincrement || ' ' ||
         s.seqmin || ' ' || s.seqmax || ' ' || s.seqcycle
    FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid, ns WHERE c.relnamespace = ns.oid
  UNION ALL
  SELECT 'type ' || t.typname || ' ' || t.typtype::text || ' ' || COALESCE((SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
         FROM pg_enum e WHERE e.enumtypid = t.oid), '')
    FROM pg_type t, ns WHERE t.typnamespace = ns.oid
  UNION ALL
  SELECT 'pol ' || po.polrelid::regclass::text || ' ' || po.polname || ' ' || po.polcmd::text || ' ' ||
         COALESCE(pg_get_expr(po.polqual, po.polrelid), '') || ' ' || COALESCE(pg_get_expr(po.polwithcheck, po.polrelid), '')
    FROM pg_policy po JOIN pg_class c ON c.oid = po.polrelid, ns WHERE c.relnamespace = ns.oid
) f(x)`

// fingerprint hashes the schema's definition and the migration records,
// which a reset keeps: a test that rewrote them changed the schema too.
func (h *heldSchema) fingerprint(ctx context.Context) (string, error) {
	q := fingerprintSQL
	for _, table := range h.meta.Kept {
		q += " UNION ALL SELECT md5(COALESCE(string_agg(r, ',' ORDER BY r), '')) FROM " +
			"(SELECT to_jsonb(t)::text AS r FROM " + h.qualified(table) + " t) k"
	}
	rows, err := h.conn.Query(ctx, q, h.name)
	if err != nil {
		return "", fmt.Errorf("error fingerprinting schema %s: %w", h.name, err)
	}
	parts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", fmt.Errorf("error fingerprinting schema %s: %w", h.name, err)
	}
	return strings.Join(parts, " "), nil
}

// release ends t's hold on the schema, after the test's pool is closed. A
// schema whose definition the test changed, or that the test dropped, is
// dropped so that no test gets it again.
func (h *heldSchema) release(t interface{ Logf(string, ...any) }) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	defer func() { _ = h.conn.Close(ctx) }()
	fp, err := h.fingerprint(ctx)
	if err == nil && fp == h.meta.Fingerprint {
		return
	}
	if err := dropSchema(ctx, h.conn, h.name); err != nil {
		t.Logf("testdb: %v", err)
	}
}

// sweepStale drops the pooled schemas of other migration sets and the empty
// schemas of tests that died, each only if no process holds it.
func sweepStale(ctx context.Context, conn *pgx.Conn) error {
	current := make([]string, 0, len(setPrefixes))
	for _, p := range setPrefixes {
		current = append(current, p)
	}
	rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace
		WHERE (nspname ~ '^tp_[ar][0-9a-f]{14}_[0-9a-f]+$' AND NOT left(nspname, $2) = ANY ($1::text[]))
		   OR nspname ~ '^t_[0-9a-f]{12}(_x+)?$'
		ORDER BY nspname`, current, len(current[0]))
	if err != nil {
		return fmt.Errorf("error listing stale schemas: %w", err)
	}
	stale, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("error listing stale schemas: %w", err)
	}
	for _, schema := range stale {
		locked, err := tryLock(ctx, conn, schema)
		if err != nil {
			return err
		}
		if !locked {
			continue
		}
		dropErr := dropSchema(ctx, conn, schema)
		if err := unlock(ctx, conn, schema); err != nil {
			return err
		}
		if dropErr != nil {
			return dropErr
		}
	}
	return nil
}
