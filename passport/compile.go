package passport

import (
	"bytes"
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/rules"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// CompileRequest names what a compile reads and the identity it gives the
// new version.
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
// version's sources (RULE_PKG_NOT_PUBLISHED unless PUBLISHED). SEALED and
// PUBLISHED are final states, so what it reads cannot go stale before the
// compile is recorded. It reads in one round trip (store.LoadCompileReads).
func LoadCompileInput(ctx context.Context, q *store.Queries, r CompileRequest) (compiler.Input, error) {
	reads, err := q.LoadCompileReads(ctx, r.TenantID, 0, r.PassportID, r.SnapshotID, r.RulePackageVersionID)
	if err != nil {
		return compiler.Input{}, err
	}
	return CompileInput(r, reads)
}

// CompileInput is the compile's input from what LoadCompileReads read for
// r, with LoadCompileInput's checks: the compile job reads once for its
// re-run check, its key and its input.
func CompileInput(r CompileRequest, reads store.CompileReads) (compiler.Input, error) {
	if reads.Missing != nil {
		return compiler.Input{}, reads.Missing
	}
	return buildInput(r, reads.Passport, reads.Snapshot, reads.Rules, reads.Facts, reads.Rules.TestsSHA256, false)
}

// loadInput reads a replay's input: a stored version's inputs, SEALED by
// construction, without the status check; the replay hashes the tests
// source itself.
func loadInput(ctx context.Context, q *store.Queries, r CompileRequest) (compiler.Input, error) {
	passport, err := q.GetPassport(ctx, r.TenantID, r.PassportID)
	if err != nil {
		return compiler.Input{}, err
	}
	sn, err := q.GetSnapshot(ctx, r.TenantID, r.SnapshotID)
	if err != nil {
		return compiler.Input{}, err
	}
	rv, err := q.GetRulePackageVersion(ctx, r.TenantID, r.RulePackageVersionID, true)
	if err != nil {
		return compiler.Input{}, err
	}
	facts, err := q.SnapshotFacts(ctx, r.TenantID, r.SnapshotID)
	if err != nil {
		return compiler.Input{}, err
	}
	return buildInput(r, passport, sn, rv, facts, "", true)
}

// buildInput checks what was read (but for a replay, the snapshot's
// status) and assembles the compiler's input. testsSHA256 is the tests
// source's digest as recorded with the rule package version; "" makes the
// compiler hash the source itself.
func buildInput(r CompileRequest, passport bpctype.Passport, sn bpctype.Snapshot, rv bpctype.RulePackageVersion,
	facts []rules.Fact, testsSHA256 string, replay bool) (compiler.Input, error) {
	if !replay && sn.Status != bpctype.SnapshotSealed {
		return compiler.Input{}, errcode.New(errcode.SnapshotNotReady, "snapshot %s is %s, not SEALED", r.SnapshotID, sn.Status)
	}
	if rv.Status != bpctype.RulesPublished {
		return compiler.Input{}, errcode.New(errcode.RulePkgNotPublished, "rule package version %s is %s, not PUBLISHED", r.RulePackageVersionID, rv.Status)
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
		TestsSHA256:          testsSHA256,
		CompilerBuildID:      r.CompilerBuildID,
		SigningKeyID:         r.SigningKeyID,
		IssuedAt:             r.IssuedAt,
		Limits:               r.Limits,
	}, nil
}

// Compiled is a compile's output for the version it will become.
type Compiled struct {
	Request CompileRequest
	Output  compiler.Output
}

// RecordCompiled stores a compile made by River job riverJobID as a new
// passport version (COMPILING), records passport.compiled and enqueues its
// SIGN_PASSPORT. The version is keyed by the job: recording the same job's
// compile again (a re-run of the job) returns the version recorded first,
// records no second event and makes sure of its SIGN_PASSPORT.
func RecordCompiled(ctx context.Context, t Tx, c Compiled, riverJobID int64) (bpctype.PassportVersion, error) {
	r, out := c.Request, c.Output
	v, existed, err := t.Q.InsertPassportVersion(ctx, store.NewPassportVersion{
		PassportVersionID:    r.PassportVersionID,
		TenantID:             r.TenantID,
		PassportID:           r.PassportID,
		SnapshotID:           r.SnapshotID,
		RulePackageVersionID: r.RulePackageVersionID,
		CompilerBuildID:      r.CompilerBuildID,
		IssuedAt:             r.IssuedAt,
		SigningKeyID:         r.SigningKeyID,
		Payload:              out.Payload,
		PayloadHash:          out.PayloadHash,
		Proof:                out.Proof,
		ProofRootHash:        out.ProofRootHash,
		Receipt:              out.Receipt,
		ReceiptHash:          out.ReceiptHash,
		CompileRiverJobID:    riverJobID,
	})
	if err != nil {
		return bpctype.PassportVersion{}, err
	}
	if existed {
		return v, EnqueueSign(ctx, t, r.TenantID, v.PassportVersionID)
	}
	// The version was created just now, by this transaction: its chain is
	// empty.
	if err := t.EventAfter(ctx, &store.Head{}, r.TenantID, AggregatePassportVersion, v.PassportVersionID, EventCompiled, map[string]any{
		"passport_id": r.PassportID, "version": v.Version, "snapshot_id": r.SnapshotID,
		"rule_package_version_id": r.RulePackageVersionID, "compiler_build_id": r.CompilerBuildID,
		"payload_hash": v.PayloadHash, "proof_root_hash": v.ProofRootHash, "receipt_hash": v.ReceiptHash,
	}); err != nil {
		return bpctype.PassportVersion{}, err
	}
	// Its SIGN_PASSPORT's key names the version just created: no job can
	// hold it yet.
	return v, t.EnqueueNextNew(ctx, signArgs(r.TenantID, v.PassportVersionID), signKey(v.PassportVersionID))
}

// ResumeCompile is the rule of a compile job's re-run: when the River job
// whose reads these are recorded its passport version on an earlier run
// (whose completion was lost), nothing is compiled again, and resume, run
// in the job's completing transaction, makes sure of that version's
// SIGN_PASSPORT. rerun is false for a job that recorded nothing yet.
func ResumeCompile(reads store.CompileReads) (resume func(context.Context, Tx) error, rerun bool) {
	v := reads.Compiled
	if v == nil {
		return nil, false
	}
	return func(ctx context.Context, t Tx) error { return EnqueueSign(ctx, t, v.TenantID, v.PassportVersionID) }, true
}

// EnqueueSign enqueues a compiled version's SIGN_PASSPORT (idempotent by
// the version).
func EnqueueSign(ctx context.Context, t Tx, tenantID, versionID uuid.UUID) error {
	return t.EnqueueNext(ctx, signArgs(tenantID, versionID), signKey(versionID))
}

func signArgs(tenantID, versionID uuid.UUID) *jobargs.SignPassportArgs {
	return &jobargs.SignPassportArgs{Base: jobargs.Base{TenantID: tenantID}, PassportVersionID: versionID}
}

func signKey(versionID uuid.UUID) string { return "sign:" + versionID.String() }

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

// Replay recompiles a stored version from its stored inputs (the sealed
// snapshot's facts, the rule package version's sources, the ids, build id,
// key id and issue time it was compiled with) and compares the result with
// the stored bytes and hashes, then verifies the stored signature over the
// receipt hash with the stored public key.
func Replay(ctx context.Context, q *store.Queries, limits compiler.Limits, tenantID, id uuid.UUID) (ReplayReport, error) {
	v, err := q.GetPassportVersion(ctx, tenantID, id)
	if err != nil {
		return ReplayReport{}, err
	}
	art, err := q.LoadPassportArtifacts(ctx, tenantID, id)
	if err != nil {
		return ReplayReport{}, err
	}
	rep := ReplayReport{PassportVersionID: id, PayloadHash: v.PayloadHash, ProofRootHash: v.ProofRootHash, ReceiptHash: v.ReceiptHash, Mismatches: []string{}}
	in, err := loadInput(ctx, q, CompileRequest{
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

// verifyStoredSignature checks the stored signature with the stored public
// key over the stored receipt hash, and that the hash is the SHA-256 of the
// stored unsigned receipt.
func verifyStoredSignature(v bpctype.PassportVersion, art bpctype.PassportArtifacts) error {
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
func signedReceiptMatches(out compiler.Output, v bpctype.PassportVersion, art bpctype.PassportArtifacts) bool {
	r := out.ReceiptFields
	r.Signature = *v.Signature
	want, err := receipt.SignedCanonical(r)
	return err == nil && bytes.Equal(want, art.ReceiptSigned)
}
