// Package public is what anyone may see of a passport without an account:
// the passport version a battery's QR code names, with its product, its
// main fields and compliance results, and whether its stored bytes verify.
//
// Only ACTIVE and SUPERSEDED versions are public (store's one lookup that
// is not scoped to a tenant); a version still being compiled, signed or
// given its QR code is not found. Verification is core/verify run on the
// bytes the service stores — payload, proof, signed receipt, QR payload and
// image — against the public key the service registered under the key id
// the receipt names, so a page says VERIFIED only when everything a third
// party could check with `bpc verify` holds.
//
// Lookup and CheckQR are the operations; Handler serves them under
// /public/v1 as JSON and, for a browser, as a page rendered on the server
// (page.go) that needs no JavaScript, and keeps the finished answers
// (Answers) until what they show changes.
package public

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/store"
)

// Verification is the outcome of verifying a version's stored bytes. The
// four checks a reader asks about are named; Verified is every check of
// core/verify passing (the four, and the QR payload's form, the version it
// names and its image), and Checks lists them all.
type Verification struct {
	// PayloadHashOK: SHA-256 of the payload is the receipt's payload_hash
	// and the QR's ph.
	PayloadHashOK bool `json:"payload_hash_ok"`
	// ProofRootOK: every proof node hashes to its content and children, up
	// to a root that is the receipt's proof_root_hash and the QR's pr.
	ProofRootOK bool `json:"proof_root_ok"`
	// ReceiptHashOK: the receipt is canonical and hashes to the QR's rh.
	ReceiptHashOK bool `json:"receipt_hash_ok"`
	// SignatureOK: the receipt's Ed25519 signature verifies with the key
	// the service registered under the receipt's key id.
	SignatureOK bool `json:"signature_ok"`
	// KeyOwnerOK: the signing key belongs to the receipt's tenant, which
	// is the version's (the platform's legacy key counts as every tenant's
	// for what it signed).
	KeyOwnerOK bool `json:"key_owner_ok"`
	// KeyValidOK: the key is not revoked, or the version was signed before
	// the key's compromise time.
	KeyValidOK bool `json:"key_valid_ok"`
	// IssuerVerified: the version's tenant has an issuer profile whose
	// identity the platform verified.
	IssuerVerified bool `json:"issuer_verified"`
	// Verified is every check passing: the bytes, the key's owner and
	// validity, and the issuer's identity (SPEC §16).
	Verified bool `json:"verified"`
	// Verdict is VERIFIED (green), ISSUER_NOT_VERIFIED (amber: signed
	// correctly by the tenant's key, but the issuer's identity is not
	// verified) or NOT_VERIFIED (red).
	Verdict string `json:"verdict" enum:"VERIFIED,ISSUER_NOT_VERIFIED,NOT_VERIFIED"`
	// FailureReason is why the verdict is not VERIFIED; empty when it is.
	FailureReason string `json:"failure_reason" enum:",CHECKS_FAILED,KEY_NOT_OWNED,KEY_REVOKED,ISSUER_NOT_VERIFIED"`
	// Issuer is who issued the version (its tenant's issuer profile).
	Issuer *IssuerView `json:"issuer"`
	// Checks are core/verify's checks, in its order, then the trust
	// checks (key owner, key validity, issuer).
	Checks []verify.Check `json:"checks"`
}

// IssuerView is the issuer of a version: its tenant and the tenant's
// issuer profile (null members when it has none), with the link to its
// public key directory.
type IssuerView struct {
	TenantID           uuid.UUID  `json:"tenant_id"`
	TenantName         string     `json:"tenant_name" doc:"The tenant's name in this service (not verified by anyone)."`
	LegalName          *string    `json:"legal_name"`
	Country            *string    `json:"country"`
	RegistrationID     *string    `json:"registration_id"`
	Website            *string    `json:"website"`
	IdentityVerified   bool       `json:"identity_verified"`
	IdentityVerifiedAt *time.Time `json:"identity_verified_at"`
	DirectoryURL       string     `json:"directory_url" doc:"The issuer's public key directory (GET /public/v1/issuers/{tenant_id})."`
}

// VerifyingKey is the key a version's receipt is verified with, with its
// owner and status.
type VerifyingKey struct {
	KeyID           string `json:"key_id"`
	Alg             string `json:"alg"`
	PublicKeyBase64 string `json:"public_key_base64"`
	// TenantID owns the key; null for the platform's legacy key.
	TenantID         *uuid.UUID `json:"tenant_id"`
	Status           string     `json:"status" enum:"active,retired,revoked"`
	RevokedAt        *time.Time `json:"revoked_at"`
	CompromisedAt    *time.Time `json:"compromised_at"`
	RevocationReason *string    `json:"revocation_reason"`
}

// Product is the battery product a passport describes.
type Product struct {
	BatteryProductID uuid.UUID `json:"battery_product_id"`
	SKU              string    `json:"sku"`
	Name             string    `json:"name"`
}

// VerifiedVersion is GET /public/v1/passport-versions/{id}.
type VerifiedVersion struct {
	PassportVersionID uuid.UUID `json:"passport_version_id"`
	PassportID        uuid.UUID `json:"passport_id"`
	BatteryProductID  uuid.UUID `json:"battery_product_id"`
	Version           int32     `json:"version"`
	// Status is ACTIVE, or SUPERSEDED when a newer version replaced it.
	Status    string     `json:"status"`
	IssuedAt  time.Time  `json:"issued_at"`
	Activated *time.Time `json:"activated_at"`
	Product   Product    `json:"product"`
	// Payload and Receipt are the stored canonical bytes (the receipt
	// signed), as JSON.
	Payload    json.RawMessage `json:"payload"`
	Receipt    json.RawMessage `json:"receipt"`
	SigningKey *VerifyingKey   `json:"signing_key"`
	QRPayload  string          `json:"qr_payload"`
	// Verification is computed from the stored bytes (remembered by Checks
	// for the same bytes).
	Verification Verification `json:"verification"`
}

// QRVerification is GET /public/v1/verify?qr= and GET /p/{id}?ph=&pr=&rh=:
// whether a scanned QR code (a BPC-QR-1 string or a BPC-QR-2 link) matches
// what the service holds for the version it names, and the verification of
// that version's bytes against the scanned code.
type QRVerification struct {
	PassportVersionID uuid.UUID `json:"passport_version_id"`
	// QRMatches is true when the QR's ph, pr and rh equal the stored hashes
	// and, for a link, LinkBaseOK.
	QRMatches bool `json:"qr_matches"`
	// LinkBaseOK: the scanned code is BPC-QR-1, or a BPC-QR-2 link whose
	// base is this service's (BPC_PUBLIC_BASE_URL, or the base of the
	// version's stored link). A link to another site is not this
	// passport's code, whatever hashes it copies.
	LinkBaseOK   bool         `json:"link_base_ok"`
	Verification Verification `json:"verification"`
	// Version is the version the QR names, for the page; not in the JSON.
	Version VerifiedVersion `json:"-"`
	// Mismatched names the QR's hashes that differ from the stored ones
	// (ph, pr, rh), and base for a link to another site, for the page;
	// the JSON's checks name them too.
	Mismatched []string `json:"-"`
	// LinkHost is the host a link whose base is not this service's leads
	// to, for the page; empty otherwise.
	LinkHost string `json:"-"`
}

// Lookup returns a public version with its verification; a version that
// is not public, or an unknown id, is NOT_FOUND.
func Lookup(ctx context.Context, q *store.Queries, id uuid.UUID) (VerifiedVersion, error) {
	return (*Checks)(nil).Lookup(ctx, q, id)
}

// Lookup is the package's Lookup, remembering verifications in c.
func (c *Checks) Lookup(ctx context.Context, q *store.Queries, id uuid.UUID) (VerifiedVersion, error) {
	v, err := q.GetPublicPassportVersion(ctx, id)
	if err != nil {
		return VerifiedVersion{}, err
	}
	qrPayload := deref(v.QRPayload)
	return view(v, withTrust(v, c.check(v, qrPayload, true))), nil
}

// qrProblem is what qr.Parse found wrong, without its code and field (the
// answer names both once, for the parameter qr).
func qrProblem(err error) string {
	if e := errcode.As(err); e != nil {
		return strings.TrimPrefix(e.Message, e.Field+": ")
	}
	return err.Error()
}

// CheckQR parses a scanned QR string, a BPC-QR-1 string or a BPC-QR-2
// link (neither: VALIDATION_ERROR naming qr), and verifies the version it
// names against it. A QR whose hashes were altered still finds its version
// by id, and then does not match nor verify. A link's base must be
// serviceBase (BPC_PUBLIC_BASE_URL; empty: none) or the base of the
// version's stored link, so that versions issued under an earlier base
// keep matching: a link to another site copying a real passport's hashes
// (a counterfeit label leading to a look-alike site) does not match, and
// the answer names the host it leads to.
func CheckQR(ctx context.Context, q *store.Queries, scanned, serviceBase string) (QRVerification, error) {
	return (*Checks)(nil).CheckQR(ctx, q, scanned, serviceBase)
}

// CheckQR is the package's CheckQR, remembering verifications in c.
func (c *Checks) CheckQR(ctx context.Context, q *store.Queries, scanned, serviceBase string) (QRVerification, error) {
	f, id, err := parseQR(scanned)
	if err != nil {
		return QRVerification{}, err
	}
	v, err := q.GetPublicPassportVersion(ctx, id)
	if err != nil {
		return QRVerification{}, err
	}
	return c.compare(v, f, linkHost(f, deref(v.QRPayload), serviceBase)), nil
}

// parseQR reads a scanned QR string and the version id it names: neither
// format is a VALIDATION_ERROR naming qr.
func parseQR(scanned string) (qr.Fields, uuid.UUID, error) {
	f, err := qr.Parse(scanned)
	if err != nil {
		return qr.Fields{}, uuid.Nil, errcode.InvalidWrap("qr", err, "is not a battery passport QR code (BPC-QR-1 or a BPC-QR-2 link): %s", qrProblem(err))
	}
	id, err := uuid.Parse(f.PassportVersionID)
	if err != nil {
		return qr.Fields{}, uuid.Nil, errcode.Invalid("qr", "names no passport version id")
	}
	return f, id, nil
}

// linkHost is "" when f is BPC-QR-1 or a link whose base is serviceBase or
// the base of storedQR (the version's own code), and otherwise the host
// the link leads to. Bases have one spelling (core/qr), so they compare
// as strings.
func linkHost(f qr.Fields, storedQR, serviceBase string) string {
	if f.Format != qr.FormatQR2 || serviceBase != "" && f.BaseURL == serviceBase {
		return ""
	}
	if stored, err := qr.Parse(storedQR); err == nil && stored.Format == qr.FormatQR2 && stored.BaseURL == f.BaseURL {
		return ""
	}
	if u, err := url.Parse(f.BaseURL); err == nil && u.Host != "" {
		return u.Host
	}
	return f.BaseURL
}

// Printed are the three hashes a BPC-QR-2 link carries in its query,
// as lowercase hex.
type Printed struct {
	PayloadHash, ProofRootHash, ReceiptHash string
}

// linkParams are a link's query parameters, in the order the link writes them.
var linkParams = [3]string{"ph", "pr", "rh"}

// ParsePrinted reads ph, pr and rh from a link's query: each exactly once,
// in the one base32 spelling core/qr writes. Anything else is a
// VALIDATION_ERROR naming the parameter: a damaged link. Other parameters
// are ignored.
func ParsePrinted(query url.Values) (Printed, error) {
	var p Printed
	targets := [3]*string{&p.PayloadHash, &p.ProofRootHash, &p.ReceiptHash}
	for i, name := range linkParams {
		values := query[name]
		switch {
		case len(values) == 0:
			return Printed{}, errcode.Invalid(name, "is missing: a link carries ph, pr and rh")
		case len(values) > 1:
			return Printed{}, errcode.Invalid(name, "is given %d times", len(values))
		}
		h, err := qr.DecodeHash(values[0])
		if err != nil {
			return Printed{}, errcode.InvalidWrap(name, err, "%s", err)
		}
		*targets[i] = h
	}
	return p, nil
}

// HasPrinted reports whether the query carries any of a link's hashes.
func HasPrinted(query url.Values) bool {
	for _, name := range linkParams {
		if query.Has(name) {
			return true
		}
	}
	return false
}

// CheckLink verifies the public version id against the hashes a BPC-QR-2
// link printed: GET /p/{id}?ph=&pr=&rh=. The scanned code it compares is
// the link as the version's own QR code spells it (its base), or, for a
// version issued with a BPC-QR-1 code, that string with the printed
// hashes, so that a link with the stored hashes is the stored code itself.
// The link was opened on this service, so its base is not compared.
func CheckLink(ctx context.Context, q *store.Queries, id uuid.UUID, p Printed) (QRVerification, error) {
	return (*Checks)(nil).CheckLink(ctx, q, id, p)
}

// CheckLink is the package's CheckLink, remembering verifications in c.
func (c *Checks) CheckLink(ctx context.Context, q *store.Queries, id uuid.UUID, p Printed) (QRVerification, error) {
	v, err := q.GetPublicPassportVersion(ctx, id)
	if err != nil {
		return QRVerification{}, err
	}
	f, err := linkFields(v, p)
	if err != nil {
		return QRVerification{}, err
	}
	return c.compare(v, f, ""), nil
}

// linkFields is the scanned code a link to v with the printed hashes
// stands for (CheckLink).
func linkFields(v store.PublicPassportVersion, p Printed) (qr.Fields, error) {
	f := qr.Fields{Format: qr.FormatQR1, PassportVersionID: v.PassportVersionID.String(),
		PayloadHash: p.PayloadHash, ProofRootHash: p.ProofRootHash, ReceiptHash: p.ReceiptHash}
	if stored, err := qr.Parse(deref(v.QRPayload)); err == nil && stored.Format == qr.FormatQR2 {
		f.Format, f.BaseURL = qr.FormatQR2, stored.BaseURL
	}
	if _, err := qr.Encode(f); err != nil {
		return qr.Fields{}, err
	}
	return f, nil
}

// hashChecks are core/verify's checks of the three hashes a QR code
// carries, in linkParams' order.
var hashChecks = [3]string{verify.CheckPayloadHash, verify.CheckProofRoot, verify.CheckReceiptHash}

// compare is the verification of v against a scanned code f, whose link
// leads to foreignHost when that is not empty (linkHost).
//
// The bytes are verified once, as Lookup verifies them: the stored QR
// code's check, remembered by c. The scanned code is then compared with
// the stored hashes as strings, and each difference fails the check of
// that hash (and a foreign base the check of the QR code): a scanned
// string never causes a verification of its own, so distinct scanned
// codes cost no CPU and evict nothing, and one that does not match still
// says NOT_VERIFIED and which hash differs.
func (c *Checks) compare(v store.PublicPassportVersion, f qr.Fields, foreignHost string) QRVerification {
	return compareWith(v, c.check(v, deref(v.QRPayload), true), f, foreignHost)
}

// compareWith is compare with the verification of v's stored code, ver,
// done already: what a cached answer keeps, so that comparing a scanned
// code needs none of the bytes.
func compareWith(v store.PublicPassportVersion, ver Verification, f qr.Fields, foreignHost string) QRVerification {
	ver = ver.clone()
	var mismatched []string
	for i, pair := range [3][2]string{{f.PayloadHash, v.PayloadHash}, {f.ProofRootHash, v.ProofRootHash}, {f.ReceiptHash, v.ReceiptHash}} {
		if pair[0] != pair[1] {
			mismatched = append(mismatched, linkParams[i])
			ver.failCheck(hashChecks[i], fmt.Sprintf("%s, but the scanned QR code says %s", pair[1], pair[0]))
		}
	}
	if foreignHost != "" {
		mismatched = append(mismatched, "base")
		ver.failCheck(verify.CheckQRPayload, fmt.Sprintf("the scanned link leads to %s (%s%s…), not this service", foreignHost, f.BaseURL, qr.LinkPath))
	} else if scanned, err := qr.Encode(f); err == nil && scanned != deref(v.QRPayload) {
		// The checks are of the stored code (its image too); say what
		// was scanned when it is another string.
		what := f.Format
		if f.Format == qr.FormatQR2 {
			what += " link to " + f.BaseURL + qr.LinkPath + "…"
		}
		ver.scanned("scanned: " + what)
	}
	ver.PayloadHashOK = ver.PayloadHashOK && f.PayloadHash == v.PayloadHash
	ver.ProofRootOK = ver.ProofRootOK && f.ProofRootHash == v.ProofRootHash
	ver.ReceiptHashOK = ver.ReceiptHashOK && f.ReceiptHash == v.ReceiptHash
	ver.Verified = ver.Verified && len(mismatched) == 0
	ver = withTrust(v, ver)
	return QRVerification{PassportVersionID: v.PassportVersionID, QRMatches: len(mismatched) == 0, LinkBaseOK: foreignHost == "",
		Verification: ver, Version: view(v, ver), Mismatched: mismatched, LinkHost: foreignHost}
}

// failCheck fails ver's check name with detail (after the detail of a
// check that failed already); a check core/verify did not run (its
// inputs failed earlier) is added.
func (ver *Verification) failCheck(name, detail string) {
	ver.Verified = false
	for i, c := range ver.Checks {
		if c.Name == name {
			if !c.OK {
				detail = c.Detail + "; " + detail
			}
			ver.Checks[i] = verify.Check{Name: name, Detail: detail}
			return
		}
	}
	ver.Checks = append(ver.Checks, verify.Check{Name: name, Detail: detail})
}

// scanned adds what was scanned to the passing QR code check.
func (ver *Verification) scanned(detail string) {
	for i, c := range ver.Checks {
		if c.Name == verify.CheckQRPayload && c.OK {
			ver.Checks[i].Detail = c.Detail + "; " + detail
		}
	}
}

func view(v store.PublicPassportVersion, ver Verification) VerifiedVersion {
	out := VerifiedVersion{
		PassportVersionID: v.PassportVersionID, PassportID: v.PassportID, BatteryProductID: v.BatteryProductID,
		Version: v.Version, Status: v.Status, IssuedAt: v.IssuedAt, Activated: v.ActivatedAt,
		Product: Product{BatteryProductID: v.BatteryProductID, SKU: v.ProductSKU, Name: v.ProductName},
		Payload: json.RawMessage(v.Payload), Receipt: json.RawMessage(v.ReceiptSigned),
		QRPayload: deref(v.QRPayload), Verification: ver,
	}
	if v.RegisteredPublicKey != nil {
		out.SigningKey = &VerifyingKey{KeyID: v.SigningKeyID, Alg: "ED25519", PublicKeyBase64: *v.RegisteredPublicKey,
			TenantID: v.KeyTenantID, Status: deref(v.KeyStatus), RevokedAt: v.KeyRevokedAt,
			CompromisedAt: v.KeyCompromisedAt, RevocationReason: v.KeyRevocationReason}
	}
	return out
}

// DirectoryPath is the path of a tenant's public key directory.
func DirectoryPath(tenantID uuid.UUID) string {
	return "/public/v1/issuers/" + tenantID.String()
}

// issuerView is the issuer of v.
func issuerView(v store.PublicPassportVersion) *IssuerView {
	iv := &IssuerView{TenantID: v.TenantID, TenantName: v.TenantName, DirectoryURL: DirectoryPath(v.TenantID)}
	if p := v.Issuer; p != nil {
		iv.LegalName, iv.Country, iv.RegistrationID = &p.LegalName, &p.Country, &p.RegistrationID
		iv.Website, iv.IdentityVerifiedAt = p.Website, p.IdentityVerifiedAt
		iv.IdentityVerified = p.IdentityVerifiedAt != nil
	}
	return iv
}

// withTrust adds the trust checks of SPEC §16 to ver, the checks of v's
// bytes: who owns the key, whether it was valid when the version was
// signed, whether the issuer is verified. They read the rows as they are
// now, on every lookup, and Checks never remembers them; an answer Answers
// keeps is dropped when those rows change.
func withTrust(v store.PublicPassportVersion, ver Verification) Verification {
	in := verify.TrustInput{
		VersionTenantID: v.TenantID.String(), KeyID: v.SigningKeyID, KeySource: "the service",
		SignedAt: v.IssuedAt, SignedAtSource: "issued",
	}
	if v.SignedAt != nil {
		in.SignedAt, in.SignedAtSource = *v.SignedAt, "signed"
	}
	// The receipt's tenant is the one it signs for; a receipt that does not
	// parse has failed its own check, and names no tenant.
	if r, err := receipt.Parse(v.ReceiptSigned); err == nil {
		in.ReceiptTenantID = r.TenantID
	}
	if v.KeyStatus != nil {
		in.Key = verify.KeyRecord{Known: true, Status: *v.KeyStatus, RevokedAt: v.KeyRevokedAt,
			CompromisedAt: v.KeyCompromisedAt, RevocationReason: deref(v.KeyRevocationReason)}
		if v.KeyTenantID != nil {
			in.Key.TenantID = v.KeyTenantID.String()
		}
	}
	if p := v.Issuer; p != nil {
		in.Issuer = &verify.Issuer{TenantID: v.TenantID.String(), LegalName: p.LegalName, Country: p.Country,
			RegistrationID: p.RegistrationID, Website: p.Website, IdentityVerifiedAt: p.IdentityVerifiedAt}
	}
	t := verify.CheckTrust(in)
	checksOK := ver.Verified
	ver.Checks = append(slices.Clone(ver.Checks), t.Checks...)
	ver.KeyOwnerOK, ver.KeyValidOK, ver.IssuerVerified = t.KeyOwnerOK, t.KeyValidOK, t.IssuerVerified
	ver.Verdict, ver.FailureReason = t.Verdict(checksOK), t.Reason(checksOK)
	ver.Verified = ver.Verdict == verify.VerdictVerified
	ver.Issuer = issuerView(v)
	return ver
}

// check verifies v's stored bytes with qrPayload as the QR string, and the
// stored QR image when withPNG.
func check(v store.PublicPassportVersion, qrPayload string, withPNG bool) Verification {
	want := verify.Expect{
		PassportVersionID: v.PassportVersionID.String(),
		PayloadHash:       v.PayloadHash, ProofRootHash: v.ProofRootHash, ReceiptHash: v.ReceiptHash,
		Signature: deref(v.Signature), SigningKeyID: v.SigningKeyID,
		From: "the service's records",
	}
	a := verify.Artifacts{Payload: v.Payload, Proof: v.Proof, Receipt: v.ReceiptSigned, QRPayload: qrPayload}
	if withPNG {
		a.QRPNG = v.QRPNG
	}
	// The key the service registered is the one trusted. Without it the
	// other checks still run, with the copy stored on the version, and the
	// signature counts as unverified.
	pub, keyErr := registeredKey(v.RegisteredPublicKey)
	if keyErr == nil {
		want.PublicKey = pub
	} else if pub, _ = registeredKey(v.SigningPublicKey); pub == nil {
		pub = make(ed25519.PublicKey, ed25519.PublicKeySize)
	}
	a.SigningKey = verify.KeyDocument(v.SigningKeyID, pub)
	// The error repeats the failed checks the report lists.
	report, _ := verify.Verify(a, want)
	if keyErr != nil {
		for i, c := range report.Checks {
			if c.Name == verify.CheckSigningKey {
				report.Checks[i] = verify.Check{Name: c.Name, Detail: keyErr.Error()}
			}
		}
	}
	checks := report.Checks
	if checks == nil {
		checks = []verify.Check{} // a list is never null
	}
	ver := Verification{
		PayloadHashOK: report.Passed(verify.CheckPayloadHash),
		ProofRootOK:   report.Passed(verify.CheckProof) && report.Passed(verify.CheckProofRoot),
		ReceiptHashOK: report.Passed(verify.CheckReceipt) && report.Passed(verify.CheckReceiptHash),
		SignatureOK:   report.Passed(verify.CheckSigningKey) && report.Passed(verify.CheckSignature),
		Checks:        checks,
	}
	ver.Verified = ver.PayloadHashOK && ver.ProofRootOK && ver.ReceiptHashOK && ver.SignatureOK && report.OK()
	return ver
}

// registeredKey parses a stored public key; none is an error that says so.
func registeredKey(b64 *string) (ed25519.PublicKey, error) {
	if b64 == nil {
		return nil, errors.New("the service has no public key registered under the key id the receipt names")
	}
	pub, err := sign.ParsePublicKey(*b64)
	if err != nil {
		return nil, errors.New("the key registered under the receipt's key id is not an Ed25519 public key")
	}
	return pub, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
