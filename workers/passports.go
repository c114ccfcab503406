package workers

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// CompilePassportWorker compiles a SEALED snapshot with a PUBLISHED rule
// package version into a new passport version (COMPILING) with its payload,
// proof and unsigned receipt, and enqueues SIGN_PASSPORT.
type CompilePassportWorker struct {
	river.WorkerDefaults[jobargs.CompilePassportArgs]
	Deps
}

// Work compiles.
func (w *CompilePassportWorker) Work(ctx context.Context, job *river.Job[jobargs.CompilePassportArgs]) error {
	a := job.Args
	if err := validate(a); err != nil {
		return err
	}
	// A re-run of a compile job that completed before finds its version.
	if v, err := w.Store.PassportVersionByCompileJob(ctx, w.Store.Pool, a.TenantID, job.ID); err == nil {
		return inTx(ctx, w.Deps, job, func(s step) (bool, error) {
			return true, s.enqueue(ctx, signArgs(a.TenantID, v.PassportVersionID), signKey(v.PassportVersionID))
		})
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}

	versionID := uuid.New()
	// SEALED and PUBLISHED are final states, so reading them outside the
	// write transaction cannot go stale.
	in, err := w.Store.LoadCompileInput(ctx, w.Store.Pool, store.CompileRequest{
		TenantID:             a.TenantID,
		PassportID:           a.PassportID,
		SnapshotID:           a.SnapshotID,
		RulePackageVersionID: a.RulePackageVersionID,
		PassportVersionID:    versionID,
		CompilerBuildID:      w.CompilerBuildID,
		SigningKeyID:         w.Signer.KeyIDOrDefault(),
		IssuedAt:             time.Now().UTC().Truncate(time.Second),
		Limits:               w.Limits,
	})
	if err != nil {
		return err
	}
	start := time.Now()
	out, err := compiler.CompilePassport(in)
	if err != nil {
		return err
	}
	if w.Metrics != nil {
		w.Metrics.CompileDuration.Observe(time.Since(start).Seconds())
		w.Metrics.PayloadBytes.Observe(float64(len(out.Payload)))
		w.Metrics.ProofBytes.Observe(float64(len(out.Proof)))
		w.Metrics.ReceiptBytes.Observe(float64(len(out.Receipt)))
	}
	return inTx(ctx, w.Deps, job, func(s step) (bool, error) {
		v, _, err := s.d.Store.InsertPassportVersion(ctx, s.tx, store.NewPassportVersion{
			PassportVersionID:    versionID,
			TenantID:             a.TenantID,
			PassportID:           a.PassportID,
			SnapshotID:           a.SnapshotID,
			RulePackageVersionID: a.RulePackageVersionID,
			CompilerBuildID:      in.CompilerBuildID,
			IssuedAt:             in.IssuedAt,
			SigningKeyID:         in.SigningKeyID,
			Payload:              out.Payload,
			PayloadHash:          out.PayloadHash,
			Proof:                out.Proof,
			ProofRootHash:        out.ProofRootHash,
			Receipt:              out.Receipt,
			ReceiptHash:          out.ReceiptHash,
			CompileRiverJobID:    job.ID,
		})
		if err != nil {
			return false, err
		}
		if err := s.event(ctx, a.TenantID, AggregatePassportVersion, v.PassportVersionID, EventCompiled, map[string]any{
			"passport_id": a.PassportID, "version": v.Version, "snapshot_id": a.SnapshotID,
			"rule_package_version_id": a.RulePackageVersionID, "compiler_build_id": in.CompilerBuildID,
			"payload_hash": v.PayloadHash, "proof_root_hash": v.ProofRootHash, "receipt_hash": v.ReceiptHash,
		}); err != nil {
			return false, err
		}
		if err := river.RecordOutput(ctx, map[string]any{"passport_version_id": v.PassportVersionID, "version": v.Version}); err != nil {
			return false, errcode.Wrap(errcode.Internal, err, "error recording job output: %s", err.Error())
		}
		return true, s.enqueue(ctx, signArgs(a.TenantID, v.PassportVersionID), signKey(v.PassportVersionID))
	})
}

func signArgs(tenantID, versionID uuid.UUID) *jobargs.SignPassportArgs {
	return &jobargs.SignPassportArgs{Base: jobargs.Base{TenantID: tenantID}, PassportVersionID: versionID}
}

func signKey(versionID uuid.UUID) string { return "sign:" + versionID.String() }

// KeyIDOrDefault returns the signer's key id, or dev-key-1 without a signer.
func (s *Signer) KeyIDOrDefault() string {
	if s == nil || s.KeyID == "" {
		return "dev-key-1"
	}
	return s.KeyID
}

// SignPassportWorker signs a COMPILING version's receipt hash (the 32 raw
// bytes) with Ed25519, stores the signature, the key id and public key and
// the signed receipt, moves the version to SIGNED and enqueues GENERATE_QR.
type SignPassportWorker struct {
	river.WorkerDefaults[jobargs.SignPassportArgs]
	Deps
}

// Work signs.
func (w *SignPassportWorker) Work(ctx context.Context, job *river.Job[jobargs.SignPassportArgs]) error {
	a := job.Args
	if err := validate(a); err != nil {
		return err
	}
	return inTx(ctx, w.Deps, job, func(s step) (bool, error) {
		v, err := s.d.Store.LockPassportVersion(ctx, s.tx, a.TenantID, a.PassportVersionID)
		if err != nil {
			return false, err
		}
		next := &jobargs.GenerateQRArgs{Base: jobargs.Base{TenantID: a.TenantID}, PassportVersionID: v.PassportVersionID}
		if v.Status != store.PassportCompiling {
			// Signed before (a re-run): make sure the QR step exists.
			return true, s.enqueue(ctx, next, qrKey(v.PassportVersionID))
		}
		key, err := s.d.Signer.Key()
		if err != nil {
			return false, err
		}
		art, err := s.d.Store.LoadPassportArtifacts(ctx, s.tx, a.TenantID, v.PassportVersionID)
		if err != nil {
			return false, err
		}
		r, err := receipt.Parse(art.Receipt)
		if err != nil {
			return false, err
		}
		keyID := s.d.Signer.KeyIDOrDefault()
		if r.SigningKeyID != keyID {
			return false, errcode.New(errcode.SigningKeyMissing,
				"the receipt names signing key %q, but this worker holds key %q", r.SigningKeyID, keyID)
		}
		hexHash, raw, err := receipt.Hash(r)
		if err != nil {
			return false, err
		}
		if hexHash != v.ReceiptHash {
			return false, errcode.New(errcode.SignatureInvalid, "the stored receipt does not hash to the version's receipt_hash")
		}
		r.Signature = sign.SignatureBase64(sign.SignHash(key, raw))
		signed, err := receipt.SignedCanonical(r)
		if err != nil {
			return false, err
		}
		if err := s.d.Store.SetPassportVersionSigned(ctx, s.tx, a.TenantID, v.PassportVersionID, r.Signature,
			keyID, s.d.Signer.PublicKeyBase64(), signed); err != nil {
			return false, err
		}
		if err := s.event(ctx, a.TenantID, AggregatePassportVersion, v.PassportVersionID, EventSigned,
			map[string]any{"signing_key_id": keyID, "receipt_hash": v.ReceiptHash}); err != nil {
			return false, err
		}
		return true, s.enqueue(ctx, next, qrKey(v.PassportVersionID))
	})
}

func qrKey(versionID uuid.UUID) string { return "qr:" + versionID.String() }

// GenerateQRWorker stores a SIGNED version's BPC-QR-1 payload and its PNG
// (error correction M); the status stays SIGNED.
type GenerateQRWorker struct {
	river.WorkerDefaults[jobargs.GenerateQRArgs]
	Deps
}

// Work renders the QR code.
func (w *GenerateQRWorker) Work(ctx context.Context, job *river.Job[jobargs.GenerateQRArgs]) error {
	a := job.Args
	if err := validate(a); err != nil {
		return err
	}
	v, err := w.Store.GetPassportVersion(ctx, w.Store.Pool, a.TenantID, a.PassportVersionID)
	if err != nil {
		return err
	}
	payload, err := qr.Payload(v.PassportVersionID.String(), v.PayloadHash, v.ProofRootHash, v.ReceiptHash)
	if err != nil {
		return err
	}
	png, err := qr.PNG(payload)
	if err != nil {
		return err
	}
	return inTx(ctx, w.Deps, job, func(s step) (bool, error) {
		v, err := s.d.Store.LockPassportVersion(ctx, s.tx, a.TenantID, a.PassportVersionID)
		if err != nil {
			return false, err
		}
		if v.QRPayload != nil {
			return true, nil // generated before
		}
		if v.Status != store.PassportSigned {
			return false, errcode.New(errcode.InvalidState, "passport version %s is %s, not SIGNED", v.PassportVersionID, v.Status)
		}
		if err := s.d.Store.SetPassportVersionQR(ctx, s.tx, a.TenantID, v.PassportVersionID, payload, png); err != nil {
			return false, err
		}
		return true, s.event(ctx, a.TenantID, AggregatePassportVersion, v.PassportVersionID, EventQRGenerated,
			map[string]any{"qr_payload": payload})
	})
}
