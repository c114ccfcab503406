// Package migrations applies the database schema: River's own tables through
// rivermigrate, then this service's append-only SQL files (NNN_name.sql,
// embedded), each in its own transaction and recorded in
// bpc_schema_migrations. A Postgres advisory lock serialises concurrent
// migrators (several replicas starting at once).
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed *.sql
var files embed.FS

// lockKey is the advisory lock held while migrating ("bpc-migrate").
const lockKey int64 = 0x6270632d6d696772

// Migration is one of this service's SQL files.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// All returns the embedded migrations in version order.
func All() ([]Migration, error) {
	entries, err := fs.Glob(files, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("error listing migrations: %w", err)
	}
	out := make([]Migration, 0, len(entries))
	seen := map[int]string{}
	for _, name := range entries {
		prefix, _, ok := strings.Cut(name, "_")
		version, convErr := strconv.Atoi(prefix)
		if !ok || convErr != nil || version <= 0 {
			return nil, fmt.Errorf("migration %q: name must be NNN_description.sql", name)
		}
		if other, dup := seen[version]; dup {
			return nil, fmt.Errorf("migrations %q and %q share version %d", other, name, version)
		}
		seen[version] = name
		body, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("error reading migration %s: %w", name, err)
		}
		out = append(out, Migration{Version: version, Name: strings.TrimSuffix(name, ".sql"), SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Status describes how far a database is behind this binary.
type Status struct {
	// RiverPending is true when River's own migrations are not all applied.
	RiverPending bool
	// Pending lists this service's migrations not yet applied.
	Pending []string
	// Unknown lists applied versions this binary does not know (a newer binary migrated).
	Unknown []int
}

// Current reports whether nothing is pending.
func (s Status) Current() bool { return !s.RiverPending && len(s.Pending) == 0 }

// String summarises what is pending for an operator.
func (s Status) String() string {
	if s.Current() {
		return "schema is current"
	}
	var parts []string
	if s.RiverPending {
		parts = append(parts, "River migrations pending")
	}
	if len(s.Pending) > 0 {
		parts = append(parts, "pending: "+strings.Join(s.Pending, ", "))
	}
	return strings.Join(parts, "; ")
}

// Check returns the migration status without changing anything.
func Check(ctx context.Context, pool *pgxpool.Pool) (Status, error) {
	var st Status
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return st, fmt.Errorf("error creating River migrator: %w", err)
	}
	res, err := migrator.Validate(ctx, nil)
	if err != nil {
		return st, fmt.Errorf("error validating River migrations: %w", err)
	}
	st.RiverPending = !res.OK

	applied, err := appliedVersions(ctx, pool)
	if err != nil {
		return st, err
	}
	all, err := All()
	if err != nil {
		return st, err
	}
	known := map[int]bool{}
	for _, m := range all {
		known[m.Version] = true
		if !applied[m.Version] {
			st.Pending = append(st.Pending, m.Name)
		}
	}
	for v := range applied {
		if !known[v] {
			st.Unknown = append(st.Unknown, v)
		}
	}
	sort.Ints(st.Unknown)
	return st, nil
}

// Up applies River's migrations and then every pending migration of ours.
func Up(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("error acquiring connection for migration: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
		return fmt.Errorf("error taking migration lock: %w", err)
	}
	defer func() {
		// Unlock on a fresh context: the caller's may be cancelled already.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", lockKey)
	}()

	if err := UpRiver(ctx, pool, logger); err != nil {
		return err
	}

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS bpc_schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("error creating bpc_schema_migrations: %w", err)
	}
	applied, err := appliedVersions(ctx, conn)
	if err != nil {
		return err
	}
	all, err := All()
	if err != nil {
		return err
	}
	for _, m := range all {
		if applied[m.Version] {
			continue
		}
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO bpc_schema_migrations (version, name) VALUES ($1, $2)", m.Version, m.Name)
			return err
		}); err != nil {
			return fmt.Errorf("error applying migration %s: %w", m.Name, err)
		}
		logger.InfoContext(ctx, "applied migration", slog.Int("version", m.Version), slog.String("name", m.Name))
	}
	return nil
}

// UpRiver applies River's own migrations only (Up calls it first).
func UpRiver(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: logger})
	if err != nil {
		return fmt.Errorf("error creating River migrator: %w", err)
	}
	res, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return fmt.Errorf("error applying River migrations: %w", err)
	}
	for _, v := range res.Versions {
		logger.InfoContext(ctx, "applied River migration", slog.Int("version", v.Version), slog.String("name", v.Name))
	}
	return nil
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func appliedVersions(ctx context.Context, db querier) (map[int]bool, error) {
	rows, err := db.Query(ctx, "SELECT version FROM bpc_schema_migrations")
	if err != nil {
		var pgErr interface{ SQLState() string }
		if errors.As(err, &pgErr) && pgErr.SQLState() == "42P01" {
			return map[int]bool{}, nil // undefined_table: nothing applied yet
		}
		return nil, fmt.Errorf("error reading applied migrations: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("error reading applied migrations: %w", err)
	}
	applied := make(map[int]bool, len(versions))
	for _, v := range versions {
		applied[v] = true
	}
	return applied, nil
}
