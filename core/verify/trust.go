package verify

import (
	"fmt"
	"time"

	"github.com/bpc-platform/bpc/core/errcode"
)

// The names of the trust checks (SPEC §16), listed after Verify's.
const (
	CheckKeyOwner = "key owner"
	CheckKeyValid = "key validity"
	CheckIssuer   = "issuer"
)

// The verdicts of a passport version (SPEC §16). Only VerdictVerified is
// green; VerdictIssuerNotVerified ("SIGNED — ISSUER NOT VERIFIED") is
// amber: the data checks out and is signed by the key of the tenant it
// names, but the platform has not verified who that tenant is.
const (
	VerdictVerified          = "VERIFIED"
	VerdictIssuerNotVerified = "ISSUER_NOT_VERIFIED"
	VerdictNotVerified       = "NOT_VERIFIED"
)

// The reasons a version is not VERIFIED, the first that applies in this
// order.
const (
	// ReasonChecksFailed: one of the checks of the bytes failed (hashes,
	// proof, receipt, signature, QR).
	ReasonChecksFailed = "CHECKS_FAILED"
	// ReasonKeyNotOwned: the signing key is not the receipt's tenant's.
	ReasonKeyNotOwned = "KEY_NOT_OWNED"
	// ReasonKeyRevoked: the key was revoked, and the version was signed at
	// or after its compromise time.
	ReasonKeyRevoked = string(errcode.KeyRevoked)
	// ReasonIssuerNotVerified: everything holds but the issuer's identity
	// is not verified.
	ReasonIssuerNotVerified = "ISSUER_NOT_VERIFIED"
)

// KeyRecord is what a trusted source (the service's records, or a saved
// key directory) says of the key a receipt names.
type KeyRecord struct {
	// Known is false when the source has no such key.
	Known bool
	// TenantID owns the key; empty for the platform's legacy key, which
	// signed every tenant's receipts before tenants had keys of their own.
	TenantID         string
	Status           string
	RevokedAt        *time.Time
	CompromisedAt    *time.Time
	RevocationReason string
}

// Issuer is a tenant's issuer profile as trust checks read it.
type Issuer struct {
	TenantID           string
	LegalName          string
	Country            string
	RegistrationID     string
	Website            *string
	IdentityVerifiedAt *time.Time
}

// TrustInput is everything the trust checks read.
type TrustInput struct {
	// ReceiptTenantID is the tenant the signed receipt names.
	ReceiptTenantID string
	// VersionTenantID is the tenant the service files the version under;
	// empty offline, where only the receipt is at hand.
	VersionTenantID string
	// SignedAt is when the version was signed: the time the service
	// recorded, or offline the receipt's issued_at. SignedAtSource names it
	// for the detail ("signed", "issued_at").
	SignedAt       time.Time
	SignedAtSource string
	// SignedAtClaimed says SignedAt is the signer's own claim (offline:
	// the receipt's issued_at), not a record a trusted party kept. Whoever
	// holds a compromised key can write any issued_at, so a revoked key
	// then vouches for nothing, whatever the time says.
	SignedAtClaimed bool
	KeyID           string
	Key             KeyRecord
	// Issuer is the receipt's tenant's profile; nil when it has none.
	Issuer *Issuer
	// KeySource names where Key comes from in details ("the service",
	// "the key directory").
	KeySource string
}

// Trust is the outcome of the trust checks.
type Trust struct {
	KeyOwnerOK     bool
	KeyValidOK     bool
	IssuerVerified bool
	// Checks are the three checks, in order.
	Checks []Check
}

// CheckTrust runs the trust checks of SPEC §16: the key belongs to the
// receipt's tenant (and the receipt's tenant is the version's); the key
// was not revoked for the time the version was signed; the issuer's
// identity is verified. It is a pure function of in.
func CheckTrust(in TrustInput) Trust {
	var t Trust
	src := in.KeySource
	if src == "" {
		src = "the key's source"
	}
	add := func(name string, ok bool, format string, args ...any) {
		t.Checks = append(t.Checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}

	switch k := in.Key; {
	case !k.Known:
		add(CheckKeyOwner, false, "%s has no key %q", src, in.KeyID)
	case in.VersionTenantID != "" && in.ReceiptTenantID != in.VersionTenantID:
		add(CheckKeyOwner, false, "the receipt names tenant %s, but the version belongs to tenant %s", in.ReceiptTenantID, in.VersionTenantID)
	case k.TenantID == "":
		t.KeyOwnerOK = true
		add(CheckKeyOwner, true, "%s is the platform's legacy key, which signed every tenant's passports before tenants had keys of their own", in.KeyID)
	case k.TenantID != in.ReceiptTenantID:
		add(CheckKeyOwner, false, "key %s belongs to tenant %s, not to the receipt's tenant %s", in.KeyID, k.TenantID, in.ReceiptTenantID)
	default:
		t.KeyOwnerOK = true
		add(CheckKeyOwner, true, "key %s belongs to tenant %s, the receipt's", in.KeyID, k.TenantID)
	}

	when := in.SignedAtSource
	if when == "" {
		when = "signed"
	}
	switch k := in.Key; {
	case !k.Known:
		add(CheckKeyValid, false, "no record of key %q", in.KeyID)
	case k.CompromisedAt == nil:
		t.KeyValidOK = true
		add(CheckKeyValid, true, "key %s is %s, not revoked", in.KeyID, statusOr(k.Status))
	case in.SignedAtClaimed:
		add(CheckKeyValid, false, "%s: key %s was revoked%s (%s), compromised from %s; the receipt says it was issued at %s, "+
			"but whoever holds a compromised key can write any time there: check the passport online, where the service's own "+
			"record of when it signed decides",
			ReasonKeyRevoked, in.KeyID, at(k.RevokedAt), reasonOr(k.RevocationReason), stamp(*k.CompromisedAt), stamp(in.SignedAt))
	case in.SignedAt.Before(*k.CompromisedAt):
		t.KeyValidOK = true
		add(CheckKeyValid, true, "key %s was revoked%s (%s), compromised from %s; this version was %s at %s, before",
			in.KeyID, at(k.RevokedAt), reasonOr(k.RevocationReason), stamp(*k.CompromisedAt), when, stamp(in.SignedAt))
	default:
		add(CheckKeyValid, false, "%s: key %s was revoked%s (%s), compromised from %s; this version was %s at %s, at or after",
			ReasonKeyRevoked, in.KeyID, at(k.RevokedAt), reasonOr(k.RevocationReason), stamp(*k.CompromisedAt), when, stamp(in.SignedAt))
	}

	switch is := in.Issuer; {
	case is == nil:
		add(CheckIssuer, false, "tenant %s has not identified itself as an issuer (no issuer profile)", in.ReceiptTenantID)
	case is.IdentityVerifiedAt == nil:
		add(CheckIssuer, false, "%s (%s, %s): identity not verified by the platform", is.LegalName, is.Country, is.RegistrationID)
	default:
		t.IssuerVerified = true
		add(CheckIssuer, true, "%s (%s, %s): identity verified by the platform at %s", is.LegalName, is.Country, is.RegistrationID, stamp(*is.IdentityVerifiedAt))
	}
	return t
}

// Verdict is the verdict of a version whose byte checks passed (or not:
// checksOK) and whose trust checks are t.
func (t Trust) Verdict(checksOK bool) string {
	switch {
	case !checksOK || !t.KeyOwnerOK || !t.KeyValidOK:
		return VerdictNotVerified
	case !t.IssuerVerified:
		return VerdictIssuerNotVerified
	}
	return VerdictVerified
}

// Reason is why the verdict is not VERIFIED (a Reason* constant), empty
// when it is.
func (t Trust) Reason(checksOK bool) string {
	switch {
	case !checksOK:
		return ReasonChecksFailed
	case !t.KeyOwnerOK:
		return ReasonKeyNotOwned
	case !t.KeyValidOK:
		return ReasonKeyRevoked
	case !t.IssuerVerified:
		return ReasonIssuerNotVerified
	}
	return ""
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func at(t *time.Time) string {
	if t == nil {
		return ""
	}
	return " at " + stamp(*t)
}

func statusOr(s string) string {
	if s == "" {
		return "registered"
	}
	return s
}

func reasonOr(s string) string {
	if s == "" {
		return "no reason given"
	}
	return "reason: " + s
}
