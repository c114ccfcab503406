package workers

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// CompilePassportWorker compiles a SEALED snapshot with a PUBLISHED rule
// package version into a new passport version (COMPILING) with its payload,
// proof and unsigned receipt, and enqueues SIGN_PASSPORT. The compile runs
// outside any transaction; its result is recorded with the job's
// completion (passport.RecordCompiled).
type CompilePassportWorker struct {
	river.WorkerDefaults[jobargs.CompilePassportArgs]
	Store *store.Queries
	// CompilerBuildID is recorded in every receipt.
	CompilerBuildID string
	// Keys names the key the receipt will be signed with: the tenant's
	// active key, created on first need.
	Keys      *passport.Keyring
	Limits    compiler.Limits
	Metrics   *Metrics
	Completer Completer
}

// Work compiles.
func (w *CompilePassportWorker) Work(ctx context.Context, job *river.Job[jobargs.CompilePassportArgs]) error {
	a := job.Args
	// Everything the compile reads, in one round trip.
	reads, err := w.Store.LoadCompileReads(ctx, a.TenantID, job.ID, a.PassportID, a.SnapshotID, a.RulePackageVersionID)
	if err != nil {
		return err
	}
	if resume, rerun := passport.ResumeCompile(reads); rerun {
		return completeInTx(ctx, w.Completer, job, func(t passport.Tx) error { return resume(ctx, t) })
	}
	// The tenant's active key names the receipt's signer; when the tenant
	// has none, one is created (and committed) before the compile.
	var keyID string
	if reads.ActiveKey != nil {
		keyID = reads.ActiveKey.KeyID
	} else {
		err = inTx(ctx, w.Completer, job, func(t passport.Tx) (bool, error) {
			var err error
			keyID, err = w.Keys.ActiveSigningKeyID(ctx, t, a.TenantID)
			return false, err
		})
		if err != nil {
			return err
		}
	}
	req := passport.CompileRequest{
		TenantID:             a.TenantID,
		PassportID:           a.PassportID,
		SnapshotID:           a.SnapshotID,
		RulePackageVersionID: a.RulePackageVersionID,
		PassportVersionID:    uuid.New(),
		CompilerBuildID:      w.CompilerBuildID,
		SigningKeyID:         keyID,
		IssuedAt:             time.Now().UTC().Truncate(time.Second),
		Limits:               w.Limits,
	}
	in, err := passport.CompileInput(req, reads)
	if err != nil {
		return err
	}
	start := time.Now()
	out, err := compiler.CompilePassport(in)
	if err != nil {
		return err
	}
	w.Metrics.observeCompile(time.Since(start), out)
	return completeInTx(ctx, w.Completer, job, func(t passport.Tx) error {
		v, err := passport.RecordCompiled(ctx, t, passport.Compiled{Request: req, Output: out}, job.ID)
		if err != nil {
			return err
		}
		return recordOutput(ctx, map[string]any{"passport_version_id": v.PassportVersionID, "version": v.Version})
	})
}
