package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/rules"
)

// CompileReads is what a compile job reads before it compiles, read in one
// round trip: the version an earlier run of the same River job stored (a
// re-run only enqueues the next step), the tenant's active signing key (the
// receipt names it), the passport, the snapshot, the rule package
// version's program and the snapshot's facts. Each read is the statement
// its own method runs (PassportVersionByCompileJob, ActiveSigningKey,
// GetPassport, GetSnapshot, GetRulePackageProgram, SnapshotFacts), sent
// together as one pipelined batch: six round trips become one on the
// pipeline's busiest step. Not a transaction: the rows a compile reads are
// final (SEALED, PUBLISHED) or re-checked when the result is recorded.
type CompileReads struct {
	// Compiled is the version this River job stored before, nil for a
	// first run.
	Compiled *bpctype.PassportVersion
	// ActiveKey is the tenant's active signing key, nil when it has none
	// yet (the keyring creates one in a transaction of its own).
	ActiveKey *bpctype.SigningKey
	Passport  bpctype.Passport
	Snapshot  bpctype.Snapshot
	Rules     bpctype.RulePackageVersion
	Facts     []rules.Fact
	// Missing is the NOT_FOUND of the first of passport, snapshot and rule
	// package version that does not exist for the tenant (the error its
	// own method returns), nil when all three do. A re-run (Compiled set)
	// does not need them.
	Missing error
}

// LoadCompileReads reads a compile's inputs in one batch (CompileReads).
func (q *Queries) LoadCompileReads(ctx context.Context, tenantID uuid.UUID, riverJobID int64, passportID, snapshotID, rulesID uuid.UUID) (CompileReads, error) {
	var out CompileReads
	var missing [3]error
	b := &pgx.Batch{}
	b.Queue(passportVersionByCompileJobSQL, tenantID, riverJobID).Query(func(rows pgx.Rows) error {
		v, found, err := oneOrNone[bpctype.PassportVersion](rows)
		if found {
			out.Compiled = &v
		}
		return wrapErr(err, "passport version of River job", riverJobID)
	})
	b.Queue(activeSigningKeySQL, tenantID).Query(func(rows pgx.Rows) error {
		k, found, err := oneOrNone[bpctype.SigningKey](rows)
		if found {
			out.ActiveKey = &k
		}
		return wrapErr(err, "active signing key of tenant", tenantID)
	})
	b.Queue(getPassportSQL, tenantID, passportID).Query(func(rows pgx.Rows) error {
		v, found, err := oneOrNone[bpctype.Passport](rows)
		out.Passport, missing[0] = v, absent(found, "passport", passportID)
		return wrapErr(err, "passport", passportID)
	})
	b.Queue(getSnapshotSQL, tenantID, snapshotID).Query(func(rows pgx.Rows) error {
		v, found, err := oneOrNone[bpctype.Snapshot](rows)
		out.Snapshot, missing[1] = v, absent(found, "snapshot", snapshotID)
		return wrapErr(err, "snapshot", snapshotID)
	})
	b.Queue(getRulePackageProgramSQL, tenantID, rulesID).Query(func(rows pgx.Rows) error {
		v, found, err := oneOrNone[bpctype.RulePackageVersion](rows)
		out.Rules, missing[2] = v, absent(found, "rule package version", rulesID)
		return wrapErr(err, "rule package version", rulesID)
	})
	b.Queue(snapshotFactsSQL, tenantID, snapshotID).Query(func(rows pgx.Rows) error {
		facts, err := pgx.CollectRows(rows, scanFact)
		out.Facts = facts
		if err != nil {
			return fmt.Errorf("error listing the facts of snapshot %s: %w", snapshotID, err)
		}
		return nil
	})
	if err := q.db.SendBatch(ctx, b).Close(); err != nil {
		return CompileReads{}, err
	}
	out.Missing = firstNonNil(missing[:])
	return out, nil
}

// oneOrNone collects at most one row of T.
func oneOrNone[T any](rows pgx.Rows) (T, bool, error) {
	v, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[T])
	if errors.Is(err, pgx.ErrNoRows) {
		return v, false, nil
	}
	return v, err == nil, err
}

// absent is the NOT_FOUND of a row that was not found, nil when it was.
func absent(found bool, what string, id any) error {
	if found {
		return nil
	}
	return notFound(pgx.ErrNoRows, what, id)
}

// wrapErr names what a failed read was reading.
func wrapErr(err error, what string, id any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("error loading %s %v: %w", what, id, err)
}

func firstNonNil(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
