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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/bpc-platform/bpc/core/errcode"
)

// ErrNotFound is returned when a row does not exist (for this tenant).
var ErrNotFound = errcode.New(errcode.NotFound, "not found")

// DBTX is what both *pgxpool.Pool and pgx.Tx provide.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Inserter inserts River jobs inside a transaction; *river.Client[pgx.Tx] is one.
type Inserter interface {
	InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

// Store is the service's data access over a pgx pool.
type Store struct {
	Pool *pgxpool.Pool
}

// New returns a Store over pool.
func New(pool *pgxpool.Pool) *Store { return &Store{Pool: pool} }

// InTx runs fn in a transaction, committing when it returns nil.
func (s *Store) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.Pool, fn)
}

// notFound maps pgx.ErrNoRows to a NOT_FOUND error naming what was missing.
func notFound(err error, what string, id any) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return errcode.Wrap(errcode.NotFound, ErrNotFound, "%s %v not found", what, id)
	}
	return fmt.Errorf("error loading %s %v: %w", what, id, err)
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
