package verify

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/sign"
)

// MaxDirectoryBytes bounds a saved key directory document (bpc verify
// --keys); MaxDirectoryKeys the keys it may list.
const (
	MaxDirectoryBytes = 1 << 20
	MaxDirectoryKeys  = 1000
)

// Directory is the public key directory of one issuer (SPEC §16): GET
// /public/v1/issuers/{tenant_id}, and the file `bpc verify --keys` reads.
// The profile's members are null for a tenant that has keys but no
// profile. The platform's legacy key, which signed every tenant's
// passports before tenants had keys of their own, is in no tenant's
// directory: a version it signed cannot be pinned to a tenant's directory.
type Directory struct {
	TenantID           string         `json:"tenant_id" format:"uuid"`
	LegalName          *string        `json:"legal_name"`
	Country            *string        `json:"country"`
	RegistrationID     *string        `json:"registration_id"`
	Website            *string        `json:"website"`
	IdentityVerified   bool           `json:"identity_verified" doc:"The platform verified the issuer's identity (and nothing in the profile changed since)."`
	IdentityVerifiedAt *time.Time     `json:"identity_verified_at"`
	Keys               []DirectoryKey `json:"keys" doc:"The tenant's signing keys, oldest first; public halves only."`
}

// DirectoryKey is one public signing key in a Directory.
type DirectoryKey struct {
	KeyID           string     `json:"key_id"`
	Alg             string     `json:"alg" enum:"ED25519"`
	PublicKeyBase64 string     `json:"public_key_base64"`
	Status          string     `json:"status" enum:"active,retired,revoked"`
	CreatedAt       time.Time  `json:"created_at"`
	RetiredAt       *time.Time `json:"retired_at"`
	RevokedAt       *time.Time `json:"revoked_at"`
	CompromisedAt   *time.Time `json:"compromised_at" doc:"Versions signed at or after this time do not verify (KEY_REVOKED)."`
}

// ParseDirectory reads a saved directory document strictly: at most
// MaxDirectoryBytes, one JSON object of exactly Directory's members,
// every key an Ed25519 key in standard base64 with a known status, no key
// id twice, and a revoked key with its compromise time.
func ParseDirectory(b []byte) (Directory, error) {
	var d Directory
	if len(b) > MaxDirectoryBytes {
		return d, fmt.Errorf("the key directory is %d bytes, more than the %d a directory may have", len(b), MaxDirectoryBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return d, fmt.Errorf("the key directory is not a directory document: %w", err)
	}
	if len(bytes.Trim(b[dec.InputOffset():], " \t\r\n")) > 0 {
		return d, errors.New("the key directory has something after its JSON object")
	}
	if d.TenantID == "" {
		return d, errors.New("the key directory has no tenant_id")
	}
	if d.IdentityVerified != (d.IdentityVerifiedAt != nil) {
		return d, errors.New("the key directory's identity_verified and identity_verified_at disagree")
	}
	if len(d.Keys) > MaxDirectoryKeys {
		return d, fmt.Errorf("the key directory lists %d keys, more than %d", len(d.Keys), MaxDirectoryKeys)
	}
	seen := map[string]bool{}
	for i, k := range d.Keys {
		where := fmt.Sprintf("keys[%d]", i)
		switch {
		case k.KeyID == "":
			return d, fmt.Errorf("%s has no key_id", where)
		case seen[k.KeyID]:
			return d, fmt.Errorf("%s: key %q is listed twice", where, k.KeyID)
		case k.Alg != receipt.SignatureAlg:
			return d, fmt.Errorf("%s: alg is %q, want %s", where, k.Alg, receipt.SignatureAlg)
		case k.Status != "active" && k.Status != "retired" && k.Status != "revoked":
			return d, fmt.Errorf("%s: status is %q, want active, retired or revoked", where, k.Status)
		case k.Status == "revoked" && k.CompromisedAt == nil:
			return d, fmt.Errorf("%s: a revoked key without compromised_at", where)
		}
		pub, err := sign.ParsePublicKey(k.PublicKeyBase64)
		if err != nil || sign.PublicKeyBase64(pub) != k.PublicKeyBase64 {
			return d, fmt.Errorf("%s: public_key_base64 is not standard base64 of %d bytes", where, ed25519.PublicKeySize)
		}
		seen[k.KeyID] = true
	}
	return d, nil
}

// Key returns the directory's key keyID, and whether it lists it.
func (d Directory) Key(keyID string) (DirectoryKey, bool) {
	for _, k := range d.Keys {
		if k.KeyID == keyID {
			return k, true
		}
	}
	return DirectoryKey{}, false
}

// Issuer returns the directory's issuer profile, nil when it has none.
func (d Directory) Issuer() *Issuer {
	if d.LegalName == nil {
		return nil
	}
	return &Issuer{TenantID: d.TenantID, LegalName: *d.LegalName, Country: deref(d.Country),
		RegistrationID: deref(d.RegistrationID), Website: d.Website, IdentityVerifiedAt: d.IdentityVerifiedAt}
}

// PinnedTrust runs the trust checks of a receipt against a saved
// directory: the receipt's key must be one of the directory's keys, the
// directory must be the receipt's tenant's, and the key not revoked: the
// receipt's issued_at is the signer's own claim, so a revoked key fails
// whatever it says (only the service's record of when it signed, online,
// can tell a version signed before the compromise). It also returns the directory's public key for the
// receipt's key (nil when it lists none), which the signature is then
// checked with.
func PinnedTrust(d Directory, receiptBytes []byte) (Trust, ed25519.PublicKey, error) {
	r, err := receipt.Parse(receiptBytes)
	if err != nil {
		return Trust{}, nil, fmt.Errorf("%s: %w", FileReceipt, err)
	}
	issued, err := time.Parse(receipt.TimeFormat, r.IssuedAt)
	if err != nil {
		return Trust{}, nil, fmt.Errorf("%s: issued_at: %w", FileReceipt, err)
	}
	in := TrustInput{
		ReceiptTenantID: r.TenantID, SignedAt: issued, SignedAtSource: "issued (receipt's issued_at)", SignedAtClaimed: true,
		KeyID: r.SigningKeyID, KeySource: "the key directory", Issuer: d.Issuer(),
	}
	var pub ed25519.PublicKey
	if d.TenantID != r.TenantID {
		// Another tenant's directory vouches for nothing of this receipt.
		in.Issuer = nil
		t := CheckTrust(in)
		t.Checks[0].Detail = fmt.Sprintf("the key directory is tenant %s's, but the receipt names tenant %s", d.TenantID, r.TenantID)
		t.Checks[2].Detail = fmt.Sprintf("the key directory does not describe tenant %s", r.TenantID)
		return t, nil, nil
	}
	if k, ok := d.Key(r.SigningKeyID); ok {
		pub, _ = sign.ParsePublicKey(k.PublicKeyBase64)
		in.Key = KeyRecord{Known: true, TenantID: d.TenantID, Status: k.Status, RevokedAt: k.RevokedAt, CompromisedAt: k.CompromisedAt}
	}
	return CheckTrust(in), pub, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
