package passport_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/internal/fixture"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/teststore"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

var issuedAt = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// sample is the NMC811 sample ready to compile in the dev tenant: a sealed
// snapshot, a published rule package version, and a passport of the
// sample's product.
type sample struct {
	fixture.Compilable
	product  bpctype.BatteryProduct
	passport bpctype.Passport
}

func (e env) sample(t *testing.T) sample {
	t.Helper()
	s := sample{Compilable: fixture.NMC811(t, e.Store, store.DevTenantID, "eu-battery-"+uuid.NewString()[:8])}
	var err error
	s.product, err = e.Store.CreateBatteryProduct(e.Ctx, store.DevTenantID, nmc811.BatterySKU, "Voltaris EV Pack 75")
	require.NoError(t, err)
	s.passport, err = e.Store.CreatePassport(e.Ctx, store.DevTenantID, s.product.BatteryProductID)
	require.NoError(t, err)
	return s
}

// request is the compile of a new version of s's passport, signed with the
// key "test-key".
func (s sample) request() passport.CompileRequest {
	return passport.CompileRequest{TenantID: store.DevTenantID, PassportID: s.passport.PassportID, SnapshotID: s.SnapshotID,
		RulePackageVersionID: s.RulesID, PassportVersionID: uuid.New(), CompilerBuildID: "bpc-test",
		SigningKeyID: "test-key", IssuedAt: issuedAt}
}

// compiled is the sample compiled and recorded as a version, as
// COMPILE_PASSPORT does it.
type compiled struct {
	sample
	out     compiler.Output
	version bpctype.PassportVersion
}

// compile compiles the sample from the store and records the version
// (COMPILING) for River job jobID.
func (e env) compile(t *testing.T, jobID int64) compiled {
	t.Helper()
	c := compiled{sample: e.sample(t)}
	req := c.request()
	in, err := passport.LoadCompileInput(e.Ctx, e.Store, req)
	require.NoError(t, err)
	c.out, err = compiler.CompilePassport(in)
	require.NoError(t, err)
	sn, err := e.Store.GetSnapshot(e.Ctx, store.DevTenantID, c.SnapshotID)
	require.NoError(t, err)
	require.Equal(t, *sn.SnapshotHash, c.out.SnapshotHash, "the compiler and the store seal the same snapshot")
	require.NoError(t, e.run(t, func(tx passport.Tx) error {
		c.version, err = passport.RecordCompiled(e.Ctx, tx, passport.Compiled{Request: req, Output: c.out}, jobID)
		return err
	}))
	return c
}

// testSigner holds a new key under the id the sample's receipts name.
func testSigner(t *testing.T) *passport.Signer {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return passport.NewSigner("test-key", key)
}

// sign signs a compiled version as SIGN_PASSPORT does, with signer as the
// platform's legacy key (registered, as at start).
func (e env) sign(t *testing.T, signer *passport.Signer, id uuid.UUID) {
	t.Helper()
	require.NoError(t, e.Store.RegisterSigningKey(e.Ctx, signer.KeyID, signer.PublicKeyBase64()))
	require.NoError(t, e.run(t, func(tx passport.Tx) error {
		return passport.SignPassportVersion(e.Ctx, tx, fixture.Keyring(t, signer), store.DevTenantID, id)
	}))
}

func (e env) replay(t *testing.T, tenantID, id uuid.UUID) passport.ReplayReport {
	t.Helper()
	rep, err := passport.Replay(e.Ctx, e.Store, compiler.Limits{}, tenantID, id)
	require.NoError(t, err)
	return rep
}

func TestLoadCompileInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)
	s := e.sample(t)
	building, err := e.Store.CreateSnapshot(e.Ctx, store.DevTenantID)
	require.NoError(t, err)
	pkg, err := e.Store.CreateRulePackage(e.Ctx, store.DevTenantID, "draft")
	require.NoError(t, err)
	draft, err := e.Store.CreateRulePackageVersion(e.Ctx, store.DevTenantID, pkg.RulePackageID, nmc811.Rules(), nmc811.Tests())
	require.NoError(t, err)

	req := s.request()
	req.Limits = compiler.Limits{PayloadMaxBytes: 1 << 20}
	load := func(mod func(r *passport.CompileRequest)) (compiler.Input, error) {
		r := req
		mod(&r)
		return passport.LoadCompileInput(e.Ctx, e.Store, r)
	}
	requireCode := func(err error, code errcode.Code) {
		t.Helper()
		require.Equal(t, code, errcode.CodeOf(err), "%v", err)
	}

	_, err = load(func(r *passport.CompileRequest) { r.SnapshotID = building.SnapshotID })
	requireCode(err, errcode.SnapshotNotReady)
	_, err = passport.MarkSnapshotReady(e.Ctx, e.Store, store.DevTenantID, building.SnapshotID)
	require.NoError(t, err)
	_, err = load(func(r *passport.CompileRequest) { r.SnapshotID = building.SnapshotID })
	requireCode(err, errcode.SnapshotNotReady)
	_, err = load(func(r *passport.CompileRequest) { r.RulePackageVersionID = draft.RulePackageVersionID })
	requireCode(err, errcode.RulePkgNotPublished)
	_, _, err = passport.StoreRuleTestsRun(e.Ctx, e.Store, bpctype.RuleTestsRun{TenantID: store.DevTenantID,
		RulePackageVersionID: draft.RulePackageVersionID, Seed: 7, Status: "PASSED",
		TotalCases: passport.MinRuleTestCases, Passed: passport.MinRuleTestCases})
	require.NoError(t, err)
	_, err = load(func(r *passport.CompileRequest) { r.RulePackageVersionID = draft.RulePackageVersionID })
	requireCode(err, errcode.RulePkgNotPublished) // VALIDATED is not enough
	_, err = load(func(r *passport.CompileRequest) { r.PassportID = uuid.New() })
	requireCode(err, errcode.NotFound)
	_, err = load(func(r *passport.CompileRequest) { r.SnapshotID = uuid.New() })
	requireCode(err, errcode.NotFound)
	_, err = load(func(r *passport.CompileRequest) { r.RulePackageVersionID = uuid.New() })
	requireCode(err, errcode.NotFound)
	_, err = load(func(r *passport.CompileRequest) { r.TenantID = other })
	requireCode(err, errcode.NotFound)

	in, err := load(func(*passport.CompileRequest) {})
	require.NoError(t, err)
	require.Equal(t, store.DevTenantID.String(), in.TenantID)
	require.Equal(t, s.passport.PassportID.String(), in.PassportID)
	require.Equal(t, s.product.BatteryProductID.String(), in.BatteryProductID)
	require.Equal(t, s.SnapshotID.String(), in.SnapshotID)
	require.Equal(t, s.RulesID.String(), in.RulePackageVersionID)
	require.Equal(t, req.PassportVersionID.String(), in.PassportVersionID)
	require.Equal(t, nmc811.Rules(), in.DSLSource)
	// The tests source only enters the receipt as its digest: the compile
	// takes the one recorded with the rule package version.
	require.Empty(t, in.TestsSource)
	require.Equal(t, hash.SHA256HexString(nmc811.Tests()), in.TestsSHA256)
	require.Equal(t, "bpc-test", in.CompilerBuildID)
	require.Equal(t, "test-key", in.SigningKeyID)
	require.True(t, issuedAt.Equal(in.IssuedAt))
	require.Equal(t, req.Limits, in.Limits)
	require.Len(t, in.Facts, e.Count(t, `SELECT count(*) FROM snapshot_items WHERE snapshot_id = $1`, s.SnapshotID))
	all, err := nmc811.Facts()
	require.NoError(t, err)
	require.ElementsMatch(t, all, in.Facts)
}

func TestReplayPassportVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.compile(t, 501)
	id := c.version.PassportVersionID

	// Unsigned: the artifacts replay, there is no signature to check.
	rep := e.replay(t, store.DevTenantID, id)
	require.True(t, rep.Match, "%v", rep.Mismatches)
	require.False(t, rep.SignatureValid)
	require.Empty(t, rep.Mismatches)
	require.Equal(t, c.out.PayloadHash, rep.PayloadHash)

	e.sign(t, testSigner(t), id)
	rep = e.replay(t, store.DevTenantID, id)
	require.True(t, rep.Match, "%v", rep.Mismatches)
	require.True(t, rep.SignatureValid)
	require.Equal(t, id, rep.PassportVersionID)
	require.Equal(t, c.out.ReceiptHash, rep.ReceiptHash)
	require.Equal(t, c.out.ProofRootHash, rep.ProofRootHash)

	_, err := passport.Replay(e.Ctx, e.Store, compiler.Limits{}, e.OtherTenant(t), id)
	require.Equal(t, errcode.NotFound, errcode.CodeOf(err), "%v", err)

	// One byte of the stored payload changed.
	art, err := e.Store.LoadPassportArtifacts(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	tampered := slices.Clone(art.Payload)
	tampered[len(tampered)/2] ^= 0x01
	e.Exec(t, `UPDATE passport_versions SET payload = $2 WHERE passport_version_id = $1`, id, tampered)
	rep = e.replay(t, store.DevTenantID, id)
	require.False(t, rep.Match)
	require.Contains(t, rep.Mismatches, "payload")
	require.NotContains(t, rep.Mismatches, "payload_hash", "the stored hash is untouched")
	require.True(t, rep.SignatureValid)
	e.Exec(t, `UPDATE passport_versions SET payload = $2 WHERE passport_version_id = $1`, id, art.Payload)
	require.True(t, e.replay(t, store.DevTenantID, id).Match)

	// The stored payload hash changed.
	e.Exec(t, `UPDATE passport_versions SET payload_hash = $2 WHERE passport_version_id = $1`, id, hash.SHA256Hex([]byte("x")))
	rep = e.replay(t, store.DevTenantID, id)
	require.False(t, rep.Match)
	require.Equal(t, []string{"payload_hash"}, rep.Mismatches)
	e.Exec(t, `UPDATE passport_versions SET payload_hash = $2 WHERE passport_version_id = $1`, id, c.out.PayloadHash)

	// The stored signature changed (another valid-looking signature).
	v, err := e.Store.GetPassportVersion(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	sig, err := base64.StdEncoding.DecodeString(*v.Signature)
	require.NoError(t, err)
	sig[0] ^= 0x01
	e.Exec(t, `UPDATE passport_versions SET signature = $2 WHERE passport_version_id = $1`, id, base64.StdEncoding.EncodeToString(sig))
	rep = e.replay(t, store.DevTenantID, id)
	require.False(t, rep.Match)
	require.False(t, rep.SignatureValid)
	require.Contains(t, rep.Mismatches, "signature")
	require.NotContains(t, rep.Mismatches, "payload")
	e.Exec(t, `UPDATE passport_versions SET signature = $2 WHERE passport_version_id = $1`, id, *v.Signature)
	require.True(t, e.replay(t, store.DevTenantID, id).Match)

	// Another key's public half.
	otherPub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	e.Exec(t, `UPDATE passport_versions SET signing_public_key = $2 WHERE passport_version_id = $1`, id, sign.PublicKeyBase64(otherPub))
	rep = e.replay(t, store.DevTenantID, id)
	require.False(t, rep.SignatureValid)
	require.Contains(t, rep.Mismatches, "signature")
	e.Exec(t, `UPDATE passport_versions SET signing_public_key = $2 WHERE passport_version_id = $1`, id, *v.SigningPublicKey)

	// A signature that is not even base64.
	e.Exec(t, `UPDATE passport_versions SET signature = 'not base64!' WHERE passport_version_id = $1`, id)
	rep = e.replay(t, store.DevTenantID, id)
	require.False(t, rep.SignatureValid)
	require.Contains(t, rep.Mismatches, "signature")
	require.Contains(t, rep.Mismatches, "receipt_signed")
	e.Exec(t, `UPDATE passport_versions SET signature = $2 WHERE passport_version_id = $1`, id, *v.Signature)

	// The stored unsigned receipt changed: it no longer replays, and the
	// signature no longer covers it.
	otherReceipt := receiptWith(t, art.Receipt, func(r *receipt.Receipt) { r.CompilerBuildID = "bpc-forged" })
	e.Exec(t, `UPDATE passport_versions SET receipt = $2 WHERE passport_version_id = $1`, id, otherReceipt)
	rep = e.replay(t, store.DevTenantID, id)
	require.False(t, rep.Match)
	require.Contains(t, rep.Mismatches, "receipt")
	require.Contains(t, rep.Mismatches, "signature")
	require.False(t, rep.SignatureValid)
	e.Exec(t, `UPDATE passport_versions SET receipt = $2 WHERE passport_version_id = $1`, id, art.Receipt)

	// The stored signed receipt changed.
	e.Exec(t, `UPDATE passport_versions SET receipt_signed = $2 WHERE passport_version_id = $1`, id, art.Receipt)
	rep = e.replay(t, store.DevTenantID, id)
	require.Equal(t, []string{"receipt_signed"}, rep.Mismatches)
	require.True(t, rep.SignatureValid)
	e.Exec(t, `UPDATE passport_versions SET receipt_signed = $2 WHERE passport_version_id = $1`, id, art.ReceiptSigned)

	// Inputs that no longer compile are reported, not returned as an error.
	e.Exec(t, `UPDATE rule_package_versions SET dsl_source = 'this is not BPC-RULES-1' WHERE rule_package_version_id = $1`, c.RulesID)
	rep = e.replay(t, store.DevTenantID, id)
	require.False(t, rep.Match)
	require.Len(t, rep.Mismatches, 1)
	require.Regexp(t, `^compile: `, rep.Mismatches[0])
	require.True(t, rep.SignatureValid)
}

// receiptWith re-encodes a canonical unsigned receipt after mod.
func receiptWith(t *testing.T, canonical []byte, mod func(r *receipt.Receipt)) []byte {
	t.Helper()
	r, err := receipt.Parse(canonical)
	require.NoError(t, err)
	mod(&r)
	b, err := receipt.UnsignedCanonical(r)
	require.NoError(t, err)
	return b
}

// Recording a compile job's result again (a re-run of the job) returns the
// version recorded first and adds no event and no second SIGN_PASSPORT.
func TestRecordCompiledAgainAddsNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.compile(t, 41)
	req := c.request()
	var again bpctype.PassportVersion
	require.NoError(t, e.run(t, func(tx passport.Tx) error {
		var err error
		again, err = passport.RecordCompiled(e.Ctx, tx, passport.Compiled{Request: req, Output: c.out}, 41)
		return err
	}))
	require.Equal(t, c.version.PassportVersionID, again.PassportVersionID)
	require.Equal(t, 1, e.Count(t, `SELECT count(*) FROM passport_versions WHERE passport_id = $1`, c.passport.PassportID))
	require.Equal(t, 1, e.events(t, passport.EventCompiled, c.version.PassportVersionID))
	require.Equal(t, 1, e.Count(t, `SELECT count(*) FROM jobs WHERE type = 'SIGN_PASSPORT'`))
}

// A compile job that recorded its version before is resumed, not compiled
// again: the resumption makes sure of that version's SIGN_PASSPORT (the one
// enqueued first) and records nothing else.
func TestResumeCompileOnlyForAJobThatRecordedAVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reads := func(tenantID uuid.UUID) store.CompileReads {
		r, err := e.Store.LoadCompileReads(e.Ctx, tenantID, 42, uuid.New(), uuid.New(), uuid.New())
		require.NoError(t, err)
		return r
	}
	_, rerun := passport.ResumeCompile(reads(store.DevTenantID))
	require.False(t, rerun, "a first run compiles")

	c := e.compile(t, 42)
	resume, rerun := passport.ResumeCompile(reads(store.DevTenantID))
	require.True(t, rerun)
	require.NoError(t, e.run(t, func(tx passport.Tx) error { return resume(e.Ctx, tx) }))
	require.Equal(t, 1, e.Count(t, `SELECT count(*) FROM jobs WHERE type = 'SIGN_PASSPORT' AND payload->>'passport_version_id' = $1`,
		c.version.PassportVersionID.String()))
	require.Equal(t, 1, e.Count(t, `SELECT count(*) FROM passport_versions WHERE passport_id = $1`, c.passport.PassportID))
	require.Equal(t, 1, e.events(t, passport.EventCompiled, c.version.PassportVersionID))

	_, rerun = passport.ResumeCompile(reads(uuid.New()))
	require.False(t, rerun, "another tenant's job recorded nothing")
}

// A compile job reads everything it needs before compiling in one round
// trip: the re-run check, the tenant's active key, the passport, the
// snapshot, the rule package version and the facts (store.LoadCompileReads).
func TestCompileReadsCostOneRoundTrip(t *testing.T) {
	t.Parallel()
	trips := &testdb.RoundTrips{}
	e := env{teststore.On(t, testdb.NewWithOptions(t, testdb.Options{Tracer: trips}))}
	s := e.sample(t)
	read := func(r passport.CompileRequest, jobID int64) (store.CompileReads, int64) {
		t.Helper()
		before := trips.Count()
		reads, err := e.Store.LoadCompileReads(e.Ctx, r.TenantID, jobID, r.PassportID, r.SnapshotID, r.RulePackageVersionID)
		require.NoError(t, err)
		return reads, trips.Count() - before
	}
	read(s.request(), 7) // the first use of each statement prepares it on the connection

	reads, n := read(s.request(), 7)
	require.EqualValues(t, 1, n)
	require.Nil(t, reads.Missing)
	require.Nil(t, reads.Compiled, "job 7 recorded nothing")
	require.Equal(t, s.passport.PassportID, reads.Passport.PassportID)
	require.Equal(t, bpctype.SnapshotSealed, reads.Snapshot.Status)
	require.Equal(t, bpctype.RulesPublished, reads.Rules.Status)
	require.Len(t, reads.Facts, e.Count(t, `SELECT count(*) FROM snapshot_items WHERE snapshot_id = $1`, s.SnapshotID))
	in, err := passport.CompileInput(s.request(), reads)
	require.NoError(t, err)
	require.Equal(t, s.product.BatteryProductID.String(), in.BatteryProductID)

	// What is missing is named, in the order the compile checks it; a
	// snapshot of another id has no facts.
	r := s.request()
	r.SnapshotID = uuid.New()
	reads, n = read(r, 7)
	require.EqualValues(t, 1, n)
	require.Equal(t, errcode.NotFound, errcode.CodeOf(reads.Missing), "%v", reads.Missing)
	require.Contains(t, reads.Missing.Error(), "snapshot "+r.SnapshotID.String())
	require.Empty(t, reads.Facts)
	_, err = passport.CompileInput(r, reads)
	require.Equal(t, errcode.NotFound, errcode.CodeOf(err))
}
