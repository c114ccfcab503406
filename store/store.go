// Package store owns the service's SQL. Every method takes ctx first, is
// scoped to a tenant where the data belongs to one, and runs on the pool or
// inside a caller's transaction (DBTX). pgx.ErrNoRows becomes ErrNotFound.
package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bpc-platform/bpc/core/errcode"
)

// ErrNotFound is returned when a row does not exist (for this tenant).
var ErrNotFound = errcode.New(errcode.NotFound, "not found")

// DBTX is what both *pgxpool.Pool and pgx.Tx provide.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Queries runs the service's SQL on whatever it was made with: a pool (each
// statement on its own connection) or a transaction (WithTx). It is cheap to
// make, so a caller holding a transaction wraps it where it needs it.
type Queries struct {
	db DBTX
}

// New returns Queries running on db, a pool or a transaction.
func New(db DBTX) *Queries { return &Queries{db: db} }

// WithTx returns Queries running inside tx.
func (q *Queries) WithTx(tx pgx.Tx) *Queries { return &Queries{db: tx} }

// DB is the pool or transaction q runs on.
func (q *Queries) DB() DBTX { return q.db }

// InTx runs fn in a transaction begun on q's pool (a savepoint when q
// already runs in a transaction), committing when fn returns nil.
func (q *Queries) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, q.db, fn)
}

// notFound maps pgx.ErrNoRows to a NOT_FOUND error naming what was missing.
func notFound(err error, what string, id any) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return errcode.Wrap(errcode.NotFound, ErrNotFound, "%s %v not found", what, id)
	}
	return fmt.Errorf("error loading %s %v: %w", what, id, err)
}

// queryOne returns the one row of T that sql returns (columns named as T's
// db tags); no row is pgx.ErrNoRows.
func queryOne[T any](ctx context.Context, db DBTX, sql string, args ...any) (T, error) {
	rows, _ := db.Query(ctx, sql, args...) // a query error surfaces from the collect
	return pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[T])
}

// getOne returns the one row of T that sql selects; no row is a NOT_FOUND
// naming what and id.
func getOne[T any](ctx context.Context, db DBTX, what string, id any, sql string, args ...any) (T, error) {
	v, err := queryOne[T](ctx, db, sql, args...)
	if err != nil {
		var zero T
		return zero, notFound(err, what, id)
	}
	return v, nil
}

// findOne returns the row of T that sql selects, if there is one: the
// lookup of a row stored before, which the caller returns instead of
// inserting another. what names it in the error.
func findOne[T any](ctx context.Context, db DBTX, what string, sql string, args ...any) (T, bool, error) {
	v, err := queryOne[T](ctx, db, sql, args...)
	switch {
	case err == nil:
		return v, true, nil
	case errors.Is(err, pgx.ErrNoRows):
		return v, false, nil
	}
	var zero T
	return zero, false, fmt.Errorf("error looking up %s: %w", what, err)
}

// lockParent locks the tenant's row that sql selects (its id, FOR UPDATE),
// so that the row's versions are numbered one at a time; no row is a
// NOT_FOUND naming what and id.
func (q *Queries) lockParent(ctx context.Context, what string, tenantID, id uuid.UUID, sql string) error {
	var locked uuid.UUID
	if err := q.db.QueryRow(ctx, sql, tenantID, id).Scan(&locked); err != nil {
		return notFound(err, what, id)
	}
	return nil
}

// list returns the rows of T that sql selects (columns named as T's db
// tags); what names them in the error.
func list[T any](ctx context.Context, db DBTX, what string, sql string, args ...any) ([]T, error) {
	return collect(ctx, db, what, pgx.RowToStructByName[T], sql, args...)
}

// collect returns the rows that sql selects, each read by rowTo; what names
// them in the error.
func collect[T any](ctx context.Context, db DBTX, what string, rowTo pgx.RowToFunc[T], sql string, args ...any) ([]T, error) {
	rows, _ := db.Query(ctx, sql, args...) // a query error surfaces from the collect
	vs, err := pgx.CollectRows(rows, rowTo)
	if err != nil {
		return nil, fmt.Errorf("error listing %s: %w", what, err)
	}
	return vs, nil
}

// create inserts a row and returns it as T (RETURNING columns named as T's
// db tags). The row's foreign key is its parent's: a violation is a
// NOT_FOUND naming the parent and parentID. The caller maps a unique
// violation, which the returned error still wraps.
func create[T any](ctx context.Context, db DBTX, what, parent string, parentID uuid.UUID, sql string, args ...any) (T, error) {
	v, err := queryOne[T](ctx, db, sql, args...)
	var zero T
	switch {
	case IsForeignKeyViolation(err):
		return zero, errcode.New(errcode.NotFound, "%s %s not found", parent, parentID)
	case err != nil:
		return zero, fmt.Errorf("error creating %s: %w", what, err)
	}
	return v, nil
}

// IsUniqueViolation reports whether err is a unique violation of constraint
// (any unique constraint when constraint is empty).
func IsUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		return false
	}
	return constraint == "" || pgErr.ConstraintName == constraint
}

// IsUnavailable reports whether err means the database could not be
// reached or went away (connection refused or lost, server shutting down,
// too many connections), as opposed to a query it rejected.
func IsUnavailable(err error) bool {
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return false
	case errors.As(err, &connectErr), errors.As(err, &netErr), pgconn.Timeout(err):
		return true
	case errors.As(err, &pgErr):
		// Class 08 connection exception; 53300 too_many_connections;
		// 57P01..57P03 admin/crash shutdown, cannot connect now.
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "53300" ||
			pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	return false
}

// IsForeignKeyViolation reports whether err is a foreign key violation.
func IsForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}
