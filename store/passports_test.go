package store_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

func (e env) createProduct(t *testing.T, tenantID uuid.UUID, sku string) bpctype.BatteryProduct {
	t.Helper()
	p, err := e.Store.CreateBatteryProduct(e.Ctx, tenantID, sku, "Pack "+sku)
	require.NoError(t, err)
	return p
}

func (e env) createPassport(t *testing.T, tenantID uuid.UUID) bpctype.Passport {
	t.Helper()
	product := e.createProduct(t, tenantID, "SKU-"+uuid.NewString()[:8])
	p, err := e.Store.CreatePassport(e.Ctx, tenantID, product.BatteryProductID)
	require.NoError(t, err)
	return p
}

// versionDeps are the rows a passport version references.
type versionDeps struct {
	tenantID, passportID, snapshotID, rulesID uuid.UUID
}

// newDeps creates a passport, an (empty, building) snapshot and a DRAFT rule
// package version: enough for the foreign keys of a stored version.
func (e env) newDeps(t *testing.T, tenantID uuid.UUID) versionDeps {
	t.Helper()
	return versionDeps{
		tenantID:   tenantID,
		passportID: e.createPassport(t, tenantID).PassportID,
		snapshotID: e.createSnapshot(t, tenantID).SnapshotID,
		rulesID:    e.sampleRules(t, tenantID).RulePackageVersionID,
	}
}

// fakeVersion is a stored version with made-up artifacts.
func (d versionDeps) fakeVersion(jobID int64) store.NewPassportVersion {
	id := uuid.New()
	return store.NewPassportVersion{
		PassportVersionID: id, TenantID: d.tenantID, PassportID: d.passportID,
		SnapshotID: d.snapshotID, RulePackageVersionID: d.rulesID,
		CompilerBuildID: "bpc-test", IssuedAt: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), SigningKeyID: "test-key",
		Payload: []byte(`{"payload":"` + id.String() + `"}`), PayloadHash: sha256Hex([]byte(id.String() + "p")),
		Proof: []byte(`{"proof":1}`), ProofRootHash: sha256Hex([]byte(id.String() + "r")),
		Receipt: []byte(`{"receipt":1}`), ReceiptHash: sha256Hex([]byte(id.String() + "h")),
		CompileRiverJobID: jobID,
	}
}

func (e env) insertVersion(t *testing.T, in store.NewPassportVersion) (bpctype.PassportVersion, bool, error) {
	t.Helper()
	var v bpctype.PassportVersion
	var existed bool
	err := e.inTx(func(q *store.Queries) (err error) {
		v, existed, err = q.InsertPassportVersion(e.Ctx, in)
		return err
	})
	return v, existed, err
}

func (e env) mustInsertVersion(t *testing.T, in store.NewPassportVersion) bpctype.PassportVersion {
	t.Helper()
	v, existed, err := e.insertVersion(t, in)
	require.NoError(t, err)
	require.False(t, existed)
	return v
}

func (e env) setSigned(t *testing.T, tenantID, id uuid.UUID, signature string, receiptSigned []byte) error {
	t.Helper()
	return e.inTx(func(q *store.Queries) error {
		return q.SetPassportVersionSigned(e.Ctx, tenantID, id, signature, "test-key", "cHVi", receiptSigned)
	})
}

func (e env) setQR(t *testing.T, tenantID, id uuid.UUID, png []byte) error {
	t.Helper()
	return e.inTx(func(q *store.Queries) error {
		return q.SetPassportVersionQR(e.Ctx, tenantID, id, "BPC-QR-1:"+id.String(), png)
	})
}

func (e env) activate(t *testing.T, tenantID, id uuid.UUID) (bpctype.PassportVersion, *uuid.UUID, bool, error) {
	t.Helper()
	var v bpctype.PassportVersion
	var previous *uuid.UUID
	var changed bool
	err := e.inTx(func(q *store.Queries) (err error) {
		v, previous, changed, err = passport.MarkPassportVersionActive(e.Ctx, q, tenantID, id)
		return err
	})
	return v, previous, changed, err
}

func (e env) passportVersion(t *testing.T, tenantID, id uuid.UUID) bpctype.PassportVersion {
	t.Helper()
	v, err := e.Store.GetPassportVersion(e.Ctx, tenantID, id)
	require.NoError(t, err)
	return v
}

// signedWithQR inserts a fake version and signs it and gives it a QR code.
func (e env) signedWithQR(t *testing.T, d versionDeps, jobID int64) bpctype.PassportVersion {
	t.Helper()
	v := e.mustInsertVersion(t, d.fakeVersion(jobID))
	require.NoError(t, e.setSigned(t, d.tenantID, v.PassportVersionID, "c2ln", []byte(`{"signed":1}`)))
	require.NoError(t, e.setQR(t, d.tenantID, v.PassportVersionID, []byte("\x89PNG")))
	return e.passportVersion(t, d.tenantID, v.PassportVersionID)
}

func TestBatteryProducts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)

	p, err := e.Store.CreateBatteryProduct(e.Ctx, store.DevTenantID, nmc811.BatterySKU, "Voltaris EV Pack 75")
	require.NoError(t, err)
	require.Equal(t, nmc811.BatterySKU, p.SKU)
	require.Equal(t, "Voltaris EV Pack 75", p.Name)
	_, err = e.Store.CreateBatteryProduct(e.Ctx, store.DevTenantID, nmc811.BatterySKU, "Again")
	c := requireCode(t, err, errcode.Conflict)
	require.Contains(t, c.Message, nmc811.BatterySKU)
	_, err = e.Store.CreateBatteryProduct(e.Ctx, uuid.New(), "X-1", "X")
	requireCode(t, err, errcode.NotFound)
	theirs, err := e.Store.CreateBatteryProduct(e.Ctx, other, nmc811.BatterySKU, "Theirs")
	require.NoError(t, err, "SKUs are unique per tenant")
	e.createProduct(t, store.DevTenantID, "AAA-1")

	require.Equal(t, p.SKU, getOwn(t, e, e.Store.GetBatteryProduct, other, p.BatteryProductID).SKU)
	list, err := e.Store.ListBatteryProducts(e.Ctx, store.DevTenantID)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, []string{"AAA-1", nmc811.BatterySKU}, []string{list[0].SKU, list[1].SKU})

	// Passports.
	pp, err := e.Store.CreatePassport(e.Ctx, store.DevTenantID, p.BatteryProductID)
	require.NoError(t, err)
	require.Equal(t, p.BatteryProductID, pp.BatteryProductID)
	require.Nil(t, pp.ActiveVersionID)
	_, err = e.Store.CreatePassport(e.Ctx, store.DevTenantID, uuid.New())
	requireCode(t, err, errcode.NotFound)
	_, err = e.Store.CreatePassport(e.Ctx, store.DevTenantID, theirs.BatteryProductID)
	requireCode(t, err, errcode.NotFound)
	_, err = e.Store.CreatePassport(e.Ctx, other, p.BatteryProductID)
	requireCode(t, err, errcode.NotFound)

	require.Equal(t, pp.PassportID, getOwn(t, e, e.Store.GetPassport, other, pp.PassportID).PassportID)
}

func TestInsertPassportVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)
	d := e.newDeps(t, store.DevTenantID)

	in1 := d.fakeVersion(101)
	v1 := e.mustInsertVersion(t, in1)
	require.Equal(t, in1.PassportVersionID, v1.PassportVersionID)
	require.Equal(t, int32(1), v1.Version)
	require.Equal(t, bpctype.PassportCompiling, v1.Status)
	require.Equal(t, int32(len(in1.Payload)), v1.PayloadBytes)
	require.Equal(t, int32(len(in1.Proof)), v1.ProofBytes)
	require.Equal(t, in1.PayloadHash, v1.PayloadHash)
	require.Equal(t, in1.ProofRootHash, v1.ProofRootHash)
	require.Equal(t, in1.ReceiptHash, v1.ReceiptHash)
	require.Equal(t, "test-key", v1.SigningKeyID)
	require.True(t, in1.IssuedAt.Equal(v1.IssuedAt))
	require.Equal(t, int64(101), *v1.CompileRiverJobID)
	require.Nil(t, v1.Signature)
	require.Nil(t, v1.SignedAt)

	v2 := e.mustInsertVersion(t, d.fakeVersion(102))
	require.Equal(t, int32(2), v2.Version)

	// A re-run of the compile job stores nothing new.
	rerun := d.fakeVersion(101)
	again, existed, err := e.insertVersion(t, rerun)
	require.NoError(t, err)
	require.True(t, existed)
	require.Equal(t, v1.PassportVersionID, again.PassportVersionID)
	require.Equal(t, int32(1), again.Version)
	require.Equal(t, 2, e.Count(t, `SELECT count(*) FROM passport_versions WHERE passport_id = $1`, d.passportID))
	_, err = e.Store.GetPassportVersion(e.Ctx, store.DevTenantID, rerun.PassportVersionID)
	requireCode(t, err, errcode.NotFound)

	byJob, err := e.Store.PassportVersionByCompileJob(e.Ctx, store.DevTenantID, 102)
	require.NoError(t, err)
	require.Equal(t, v2.PassportVersionID, byJob.PassportVersionID)
	_, err = e.Store.PassportVersionByCompileJob(e.Ctx, store.DevTenantID, 999)
	requireCode(t, err, errcode.NotFound)
	require.True(t, errors.Is(err, store.ErrNotFound))
	_, err = e.Store.PassportVersionByCompileJob(e.Ctx, other, 102)
	requireCode(t, err, errcode.NotFound)

	list, err := e.Store.ListPassportVersions(e.Ctx, store.DevTenantID, d.passportID)
	require.NoError(t, err)
	require.Equal(t, []int32{2, 1}, []int32{list[0].Version, list[1].Version})
	list, err = e.Store.ListPassportVersions(e.Ctx, other, d.passportID)
	require.NoError(t, err)
	require.Empty(t, list)
	_, err = e.Store.GetPassportVersion(e.Ctx, other, v1.PassportVersionID)
	requireCode(t, err, errcode.NotFound)

	// Unknown or foreign passports, snapshots and rule versions are refused.
	bad := d.fakeVersion(103)
	bad.PassportID = uuid.New()
	_, _, err = e.insertVersion(t, bad)
	requireCode(t, err, errcode.NotFound)
	bad = d.fakeVersion(104)
	bad.TenantID = other
	_, _, err = e.insertVersion(t, bad)
	requireCode(t, err, errcode.NotFound)
	theirs := e.newDeps(t, other)
	bad = d.fakeVersion(105)
	bad.SnapshotID = theirs.snapshotID
	_, _, err = e.insertVersion(t, bad)
	require.True(t, store.IsForeignKeyViolation(err), "%v", err)
	bad = d.fakeVersion(106)
	bad.RulePackageVersionID = theirs.rulesID
	_, _, err = e.insertVersion(t, bad)
	require.True(t, store.IsForeignKeyViolation(err), "%v", err)
	require.Equal(t, 2, e.Count(t, `SELECT count(*) FROM passport_versions`))
}

func TestPassportVersionSigningAndQR(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)
	d := e.newDeps(t, store.DevTenantID)
	in := d.fakeVersion(201)
	v := e.mustInsertVersion(t, in)
	id := v.PassportVersionID

	art, err := e.Store.LoadPassportArtifacts(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	require.Equal(t, in.Payload, art.Payload)
	require.Equal(t, in.Proof, art.Proof)
	require.Equal(t, in.Receipt, art.Receipt)
	require.Nil(t, art.ReceiptSigned)
	require.Nil(t, art.QRPNG)
	// Signing reads the version and its unsigned receipt, nothing larger.
	locked, receipt, err := e.Store.LockPassportVersionReceipt(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	require.Equal(t, v, locked)
	require.Equal(t, in.Receipt, receipt)
	_, _, err = e.Store.LockPassportVersionReceipt(e.Ctx, other, id)
	requireCode(t, err, errcode.NotFound)

	// QR codes need a signature; signing happens once, from COMPILING.
	requireCode(t, e.setQR(t, store.DevTenantID, id, []byte("png")), errcode.InvalidState)
	// Another tenant cannot sign it (the store answers INVALID_STATE, not NOT_FOUND).
	require.Error(t, e.setSigned(t, other, id, "c2ln", []byte(`{"signed":1}`)))
	require.Equal(t, bpctype.PassportCompiling, e.passportVersion(t, store.DevTenantID, id).Status)
	require.NoError(t, e.setSigned(t, store.DevTenantID, id, "c2ln", []byte(`{"signed":1}`)))
	requireCode(t, e.setSigned(t, store.DevTenantID, id, "b3RoZXI=", []byte(`{"signed":2}`)), errcode.InvalidState)
	signed := e.passportVersion(t, store.DevTenantID, id)
	require.Equal(t, bpctype.PassportSigned, signed.Status)
	require.Equal(t, "c2ln", *signed.Signature)
	require.Equal(t, "cHVi", *signed.SigningPublicKey)
	require.NotNil(t, signed.SignedAt)
	require.Nil(t, signed.QRPayload)

	require.Error(t, e.setQR(t, other, id, []byte("png")))
	require.Nil(t, e.passportVersion(t, store.DevTenantID, id).QRPayload)
	png := []byte("\x89PNG\r\n\x1a\n\x00binary\xff")
	require.NoError(t, e.setQR(t, store.DevTenantID, id, png))
	withQR := e.passportVersion(t, store.DevTenantID, id)
	require.Equal(t, "BPC-QR-1:"+id.String(), *withQR.QRPayload)
	require.NotNil(t, withQR.QRGeneratedAt)

	art, err = e.Store.LoadPassportArtifacts(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	require.Equal(t, in.Payload, art.Payload)
	require.Equal(t, []byte(`{"signed":1}`), art.ReceiptSigned)
	require.Equal(t, png, art.QRPNG)
	_, err = e.Store.LoadPassportArtifacts(e.Ctx, other, id)
	requireCode(t, err, errcode.NotFound)
}

func TestActivatePassportVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)
	d := e.newDeps(t, store.DevTenantID)

	compiling := e.mustInsertVersion(t, d.fakeVersion(301))
	_, _, _, err := e.activate(t, store.DevTenantID, compiling.PassportVersionID)
	requireCode(t, err, errcode.InvalidState)

	noQR := e.mustInsertVersion(t, d.fakeVersion(302))
	require.NoError(t, e.setSigned(t, store.DevTenantID, noQR.PassportVersionID, "c2ln", []byte("{}")))
	_, _, _, err = e.activate(t, store.DevTenantID, noQR.PassportVersionID)
	is := requireCode(t, err, errcode.InvalidState)
	require.Contains(t, is.Message, "without a QR code")

	first := e.signedWithQR(t, d, 303)
	_, _, _, err = e.activate(t, other, first.PassportVersionID)
	requireCode(t, err, errcode.NotFound)
	active, previous, changed, err := e.activate(t, store.DevTenantID, first.PassportVersionID)
	require.NoError(t, err)
	require.True(t, changed)
	require.Nil(t, previous)
	require.Equal(t, bpctype.PassportActive, active.Status)
	require.NotNil(t, active.ActivatedAt)
	pp, err := e.Store.GetPassport(e.Ctx, store.DevTenantID, d.passportID)
	require.NoError(t, err)
	require.Equal(t, first.PassportVersionID, *pp.ActiveVersionID)

	// Again: nothing changes.
	again, previous, changed, err := e.activate(t, store.DevTenantID, first.PassportVersionID)
	require.NoError(t, err)
	require.False(t, changed)
	require.Nil(t, previous)
	require.Equal(t, bpctype.PassportActive, again.Status)
	require.True(t, active.ActivatedAt.Equal(*again.ActivatedAt))

	// A second version supersedes the first.
	second := e.signedWithQR(t, d, 304)
	active, previous, changed, err = e.activate(t, store.DevTenantID, second.PassportVersionID)
	require.NoError(t, err)
	require.True(t, changed)
	require.NotNil(t, previous)
	require.Equal(t, first.PassportVersionID, *previous)
	require.Equal(t, bpctype.PassportActive, active.Status)
	old := e.passportVersion(t, store.DevTenantID, first.PassportVersionID)
	require.Equal(t, bpctype.PassportSuperseded, old.Status)
	require.NotNil(t, old.SupersededAt)
	pp, err = e.Store.GetPassport(e.Ctx, store.DevTenantID, d.passportID)
	require.NoError(t, err)
	require.Equal(t, second.PassportVersionID, *pp.ActiveVersionID)
	require.Equal(t, 1, e.Count(t, `SELECT count(*) FROM passport_versions WHERE passport_id = $1 AND status = 'ACTIVE'`, d.passportID))

	// A superseded version cannot come back.
	_, _, _, err = e.activate(t, store.DevTenantID, first.PassportVersionID)
	requireCode(t, err, errcode.InvalidState)

	// Other passports are untouched.
	d2 := d
	d2.passportID = e.createPassport(t, store.DevTenantID).PassportID
	otherPassport := e.signedWithQR(t, d2, 305)
	_, previous, _, err = e.activate(t, store.DevTenantID, otherPassport.PassportVersionID)
	require.NoError(t, err)
	require.Nil(t, previous)
	require.Equal(t, bpctype.PassportActive, e.passportVersion(t, store.DevTenantID, second.PassportVersionID).Status)

	// The schema allows at most one ACTIVE version per passport.
	_, err = e.Pool.Exec(e.Ctx, `UPDATE passport_versions SET status = 'ACTIVE' WHERE passport_version_id = $1`, first.PassportVersionID)
	require.True(t, store.IsUniqueViolation(err, "passport_versions_one_active"), "%v", err)
}

func TestRecordPassportExport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.newDeps(t, store.DevTenantID)
	v := e.signedWithQR(t, d, 401)

	rec := func(ex bpctype.PassportExport) bpctype.PassportExport {
		t.Helper()
		out, err := committed(e, func(q *store.Queries) (bpctype.PassportExport, error) { return q.RecordPassportExport(e.Ctx, ex) })
		require.NoError(t, err)
		return out
	}
	ex := bpctype.PassportExport{TenantID: store.DevTenantID, PassportVersionID: v.PassportVersionID, Format: "json",
		Path: "/exports/a.json", SizeBytes: 123, SHA256: sha256Hex([]byte("a")), RiverJobID: ptr(int64(77))}
	first := rec(ex)
	require.Equal(t, "json", first.Format)
	require.Equal(t, int64(123), first.SizeBytes)
	require.Equal(t, int64(77), *first.RiverJobID)

	again := rec(ex)
	require.Equal(t, first.PassportExportID, again.PassportExportID)
	require.Equal(t, 1, e.Count(t, `SELECT count(*) FROM passport_exports`))

	ex.RiverJobID = ptr(int64(78))
	ex.Format = "zip"
	second := rec(ex)
	require.NotEqual(t, first.PassportExportID, second.PassportExportID)

	list, err := e.Store.ListPassportExports(e.Ctx, store.DevTenantID, v.PassportVersionID)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, second.PassportExportID, list[0].PassportExportID, "newest first")
	list, err = e.Store.ListPassportExports(e.Ctx, e.OtherTenant(t), v.PassportVersionID)
	require.NoError(t, err)
	require.Empty(t, list)
}

func TestSigningKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pub := func() string {
		p, _, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		return sign.PublicKeyBase64(p)
	}
	a, b := pub(), pub()

	require.NoError(t, e.Store.RegisterSigningKey(e.Ctx, "prod-1", a))
	require.NoError(t, e.Store.RegisterSigningKey(e.Ctx, "prod-1", a), "the same key again is fine")
	requireCode(t, e.Store.RegisterSigningKey(e.Ctx, "prod-1", b), errcode.Conflict)

	_, err := e.Store.DevSigningSeed(e.Ctx, "dev-1")
	requireCode(t, err, errcode.NotFound)
	require.True(t, errors.Is(err, store.ErrNotFound))
	_, err = e.Store.DevSigningSeed(e.Ctx, "prod-1")
	require.True(t, errors.Is(err, store.ErrNotFound), "a registered key without a seed is no dev key")

	seed := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	stored, err := e.Store.StoreDevSigningKey(e.Ctx, "dev-1", b, seed)
	require.NoError(t, err)
	require.Equal(t, seed, stored)
	got, err := e.Store.DevSigningSeed(e.Ctx, "dev-1")
	require.NoError(t, err)
	require.Equal(t, seed, got)
	// A second start that generated another key gets the first one's seed.
	stored, err = e.Store.StoreDevSigningKey(e.Ctx, "dev-1", a, base64.StdEncoding.EncodeToString(make([]byte, 32)))
	require.NoError(t, err)
	require.Equal(t, seed, stored)
	_, err = e.Store.StoreDevSigningKey(e.Ctx, "prod-1", a, seed)
	requireCode(t, err, errcode.Conflict)
	require.NoError(t, e.Store.RegisterSigningKey(e.Ctx, "dev-1", b), "registering a dev key's public half is fine")

	keys, err := e.Store.ListSigningKeys(e.Ctx)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.Equal(t, "dev-1", keys[0].KeyID)
	require.Equal(t, b, keys[0].PublicKeyBase64)
	require.Equal(t, "prod-1", keys[1].KeyID)
	require.Equal(t, a, keys[1].PublicKeyBase64)
	require.Equal(t, "ED25519", keys[1].Alg)
}
