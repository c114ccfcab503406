package store

import (
	"bytes"
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/sign"
)

// CompileRequest names what a compile reads.
type CompileRequest struct {
	TenantID             uuid.UUID
	PassportID           uuid.UUID
	SnapshotID           uuid.UUID
	RulePackageVersionID uuid.UUID
	// PassportVersionID is the id the new version will have.
	PassportVersionID uuid.UUID
	CompilerBuildID   string
	SigningKeyID      string
	IssuedAt          time.Time
	Limits            compiler.Limits
}

// LoadCompileInput gathers a compile's input: the passport's product, the
// snapshot's facts (SNAPSHOT_NOT_READY unless SEALED) and the rule package
// version's sources (RULE_PKG_NOT_PUBLISHED unless PUBLISHED).
func (s *Store) LoadCompileInput(ctx context.Context, db DBTX, r CompileRequest) (compiler.Input, error) {
	passport, err := s.GetPassport(ctx, db, r.TenantID, r.PassportID)
	if err != nil {
		return compiler.Input{}, err
	}
	sn, err := s.GetSnapshot(ctx, db, r.TenantID, r.SnapshotID)
	if err != nil {
		return compiler.Input{}, err
	}
	if sn.Status != SnapshotSealed {
		return compiler.Input{}, errcode.New(errcode.SnapshotNotReady, "snapshot %s is %s, not SEALED", r.SnapshotID, sn.Status)
	}
	rv, err := s.GetRulePackageVersion(ctx, db, r.TenantID, r.RulePackageVersionID, true)
	if err != nil {
		return compiler.Input{}, err
	}
	if rv.Status != RulesPublished {
		return compiler.Input{}, errcode.New(errcode.RulePkgNotPublished, "rule package version %s is %s, not PUBLISHED", r.RulePackageVersionID, rv.Status)
	}
	facts, err := s.SnapshotFacts(ctx, db, r.TenantID, r.SnapshotID)
	if err != nil {
		return compiler.Input{}, err
	}
	return compiler.Input{
		TenantID:             r.TenantID.String(),
		PassportVersionID:    r.PassportVersionID.String(),
		PassportID:           r.PassportID.String(),
		BatteryProductID:     passport.BatteryProductID.String(),
		SnapshotID:           r.SnapshotID.String(),
		Facts:                facts,
		RulePackageVersionID: r.RulePackageVersionID.String(),
		DSLSource:            rv.DSLSource,
		TestsSource:          rv.TestsSource,
		CompilerBuildID:      r.CompilerBuildID,
		SigningKeyID:         r.SigningKeyID,
		IssuedAt:             r.IssuedAt,
		Limits:               r.Limits,
	}, nil
}

// ReplayReport is the outcome of recompiling a stored passport version.
type ReplayReport struct {
	PassportVersionID uuid.UUID `json:"passport_version_id"`
	Match             bool      `json:"match"`
	PayloadHash       string    `json:"payload_hash"`
	ProofRootHash     string    `json:"proof_root_hash"`
	ReceiptHash       string    `json:"receipt_hash"`
	SignatureValid    bool      `json:"signature_valid"`
	// Mismatches names what differs: "payload", "proof", "receipt",
	// "payload_hash", "proof_root_hash", "receipt_hash", "signature",
	// "receipt_signed", "compile: <error>".
	Mismatches []string `json:"mismatches"`
}

// ReplayPassportVersion recompiles a stored version from its stored inputs
// (the sealed snapshot's facts, the rule package version's sources, the ids,
// build id, key id and issue time it was compiled with) and compares the
// result with the stored bytes and hashes, then verifies the stored
// signature over the receipt hash with the stored public key.
func (s *Store) ReplayPassportVersion(ctx context.Context, db DBTX, tenantID, id uuid.UUID, limits compiler.Limits) (ReplayReport, error) {
	v, err := s.GetPassportVersion(ctx, db, tenantID, id)
	if err != nil {
		return ReplayReport{}, err
	}
	art, err := s.LoadPassportArtifacts(ctx, db, tenantID, id)
	if err != nil {
		return ReplayReport{}, err
	}
	rep := ReplayReport{PassportVersionID: id, PayloadHash: v.PayloadHash, ProofRootHash: v.ProofRootHash, ReceiptHash: v.ReceiptHash, Mismatches: []string{}}
	in, err := s.loadReplayInput(ctx, db, v, limits)
	if err != nil {
		return ReplayReport{}, err
	}
	out, err := compiler.CompilePassport(in)
	if err != nil {
		rep.Mismatches = append(rep.Mismatches, "compile: "+err.Error())
	} else {
		for _, c := range []struct {
			name      string
			same      bool
			hashName  string
			hashEqual bool
		}{
			{"payload", bytes.Equal(out.Payload, art.Payload), "payload_hash", out.PayloadHash == v.PayloadHash},
			{"proof", bytes.Equal(out.Proof, art.Proof), "proof_root_hash", out.ProofRootHash == v.ProofRootHash},
			{"receipt", bytes.Equal(out.Receipt, art.Receipt), "receipt_hash", out.ReceiptHash == v.ReceiptHash},
		} {
			if !c.same {
				rep.Mismatches = append(rep.Mismatches, c.name)
			}
			if !c.hashEqual {
				rep.Mismatches = append(rep.Mismatches, c.hashName)
			}
		}
	}
	if v.Signature != nil {
		rep.SignatureValid = verifyStoredSignature(v, art) == nil
		if !rep.SignatureValid {
			rep.Mismatches = append(rep.Mismatches, "signature")
		}
		if err == nil && !signedReceiptMatches(out, v, art) {
			rep.Mismatches = append(rep.Mismatches, "receipt_signed")
		}
	}
	rep.Match = len(rep.Mismatches) == 0
	return rep, nil
}

// loadReplayInput is LoadCompileInput for a stored version, without the
// status checks (a snapshot and a rule version stay SEALED and PUBLISHED).
func (s *Store) loadReplayInput(ctx context.Context, db DBTX, v PassportVersion, limits compiler.Limits) (compiler.Input, error) {
	in, err := s.LoadCompileInput(ctx, db, CompileRequest{
		TenantID:             v.TenantID,
		PassportID:           v.PassportID,
		SnapshotID:           v.SnapshotID,
		RulePackageVersionID: v.RulePackageVersionID,
		PassportVersionID:    v.PassportVersionID,
		CompilerBuildID:      v.CompilerBuildID,
		SigningKeyID:         v.SigningKeyID,
		IssuedAt:             v.IssuedAt,
		Limits:               limits,
	})
	return in, err
}

// verifyStoredSignature checks the stored signature with the stored public
// key over the stored receipt hash, and that the hash is the SHA-256 of the
// stored unsigned receipt.
func verifyStoredSignature(v PassportVersion, art PassportArtifacts) error {
	if v.Signature == nil || v.SigningPublicKey == nil {
		return errcode.New(errcode.SignatureInvalid, "version is not signed")
	}
	r, err := receipt.Parse(art.Receipt)
	if err != nil {
		return err
	}
	hexHash, raw, err := receipt.Hash(r)
	if err != nil {
		return err
	}
	if hexHash != v.ReceiptHash {
		return errcode.New(errcode.SignatureInvalid, "stored receipt does not hash to receipt_hash")
	}
	pub, err := sign.ParsePublicKey(*v.SigningPublicKey)
	if err != nil {
		return err
	}
	sig, err := sign.ParseSignature(*v.Signature)
	if err != nil {
		return err
	}
	return sign.Verify(pub, raw, sig)
}

// signedReceiptMatches checks the stored signed receipt against the
// recompiled receipt plus the stored signature.
func signedReceiptMatches(out compiler.Output, v PassportVersion, art PassportArtifacts) bool {
	r := out.ReceiptFields
	r.Signature = *v.Signature
	want, err := receipt.SignedCanonical(r)
	return err == nil && bytes.Equal(want, art.ReceiptSigned)
}
