package passport

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"golang.org/x/text/language"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
)

// The audit events of a tenant's issuer profile (SPEC §16), on the
// tenant's event chain (aggregate Tenant).
const (
	// EventIssuerUpdated: the profile was created or changed; its payload
	// is IssuerUpdated.
	EventIssuerUpdated = "issuer.updated"
	// EventIssuerVerified: the platform verified the issuer's identity; its
	// payload is IssuerVerified.
	EventIssuerVerified = "issuer.verified"
)

// The bounds of an issuer profile's members.
const (
	MaxIssuerLegalName      = 200
	MaxIssuerRegistrationID = 100
	MaxIssuerWebsite        = 300
)

// IssuerInput is what a tenant's admin (or the platform) says of the
// tenant as an issuer: PUT /v1/tenants/{id}/issuer.
type IssuerInput struct {
	LegalName      string  `json:"legal_name" minLength:"1" maxLength:"200" doc:"The company's registered name, as the public page names the issuer. Printable text, no control characters."`
	Country        string  `json:"country" pattern:"^[A-Z]{2}$" doc:"Country of registration: an assigned ISO 3166-1 alpha-2 code in upper case, e.g. DE."`
	RegistrationID string  `json:"registration_id" minLength:"1" maxLength:"100" doc:"The company's registration number, e.g. its EORI or VAT number."`
	Website        *string `json:"website,omitempty" maxLength:"300" doc:"The company's website: an https URL of at most 300 characters."`
}

// IssuerUpdated is the payload of issuer.updated.
type IssuerUpdated struct {
	bpctype.IssuerProfile
	// VerificationCleared: the profile was verified before this change,
	// and no longer is.
	VerificationCleared bool `json:"verification_cleared"`
}

// countryPattern is the form of a country code; language.ParseRegion
// also reads lower case and three-letter and numeric codes, which a
// profile does not take.
var countryPattern = regexp.MustCompile(`^[A-Z]{2}$`)

// reservedRegions are codes that language.Region counts as countries but
// ISO 3166-1 does not assign: exceptionally or transitionally reserved,
// withdrawn, or user-assigned.
var reservedRegions = map[string]bool{
	"AC": true, "AN": true, "BU": true, "CP": true, "CS": true, "DD": true, "DG": true, "EA": true, "EU": true,
	"EZ": true, "FX": true, "IC": true, "NT": true, "SU": true, "TA": true, "TP": true, "UK": true, "UN": true,
	"XK": true, "YU": true, "ZR": true,
}

// ValidCountry reports whether code is an assigned ISO 3166-1 alpha-2
// country code, in upper case.
func ValidCountry(code string) bool {
	if !countryPattern.MatchString(code) || reservedRegions[code] {
		return false
	}
	r, err := language.ParseRegion(code)
	return err == nil && r.IsCountry() && r.String() == code
}

// printable checks that s is 1..max characters of valid UTF-8 without
// control or format characters (no line breaks, no bidirectional
// overrides that would make a page show another name than the one
// stored), and not blank.
func printable(field, example, s string, max int) error {
	switch {
	case !utf8.ValidString(s):
		return errcode.Invalid(field, "must be valid UTF-8")
	case strings.TrimSpace(s) == "":
		return errcode.Invalid(field, "is required, e.g. %q", example)
	case utf8.RuneCountInString(s) > max:
		return errcode.Invalid(field, "must be at most %d characters, got %d", max, utf8.RuneCountInString(s))
	case s != strings.TrimSpace(s):
		return errcode.Invalid(field, "must not start or end with spaces")
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return errcode.Invalid(field, "must not contain control or format characters (found %U)", r)
		}
	}
	return nil
}

// validWebsite checks an https URL with a host, no credentials and at
// most MaxIssuerWebsite bytes.
func validWebsite(s string) error {
	const field = "website"
	if len(s) > MaxIssuerWebsite {
		return errcode.Invalid(field, "must be at most %d characters, got %d", MaxIssuerWebsite, len(s))
	}
	if err := printable(field, "https://voltaris.example", s, MaxIssuerWebsite); err != nil {
		return err
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || strings.ContainsAny(s, " \t"):
		return errcode.Invalid(field, "must be a URL like https://voltaris.example")
	case u.Scheme != "https":
		return errcode.Invalid(field, "must be an https URL like https://voltaris.example, got scheme %q", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return errcode.Invalid(field, "must name a host, like https://voltaris.example")
	case u.User != nil:
		return errcode.Invalid(field, "must not hold a user name or password")
	}
	return nil
}

// Validate checks in, naming the first member that is wrong
// (VALIDATION_ERROR). An empty website is none.
func (in IssuerInput) Validate() error {
	if err := printable("legal_name", "Voltaris Battery Systems GmbH", in.LegalName, MaxIssuerLegalName); err != nil {
		return err
	}
	if !ValidCountry(in.Country) {
		return errcode.Invalid("country", "must be an assigned ISO 3166-1 alpha-2 country code in upper case, like DE, got %q", in.Country)
	}
	if err := printable("registration_id", "DE123456789012345", in.RegistrationID, MaxIssuerRegistrationID); err != nil {
		return err
	}
	if in.Website != nil && *in.Website != "" {
		return validWebsite(*in.Website)
	}
	return nil
}

// sameProfile reports whether p already holds in's values.
func (in IssuerInput) sameProfile(p bpctype.IssuerProfile) bool {
	website := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	return p.LegalName == in.LegalName && p.Country == in.Country && p.RegistrationID == in.RegistrationID &&
		website(p.Website) == website(in.Website)
}

// SetIssuerProfile creates or changes the tenant's issuer profile. A change
// of any member clears the platform's identity verification (the company
// it checked may not be the one now named) and is audited as
// issuer.updated saying whether it did; the same values again change
// nothing, keep the verification and record no event. An invalid member
// is a VALIDATION_ERROR naming it; an unknown tenant NOT_FOUND.
func SetIssuerProfile(ctx context.Context, t Tx, tenantID uuid.UUID, in IssuerInput) (bpctype.IssuerProfile, error) {
	if err := in.Validate(); err != nil {
		return bpctype.IssuerProfile{}, err
	}
	if in.Website != nil && *in.Website == "" {
		in.Website = nil
	}
	// The tenant's row lock serialises the first PUT of two racing ones
	// (there is no profile row yet to lock).
	if _, err := t.Q.LockTenantQuotas(ctx, tenantID); err != nil {
		return bpctype.IssuerProfile{}, err
	}
	cur, err := t.Q.LockIssuerProfile(ctx, tenantID)
	exists := err == nil
	if err != nil && errcode.CodeOf(err) != errcode.NotFound {
		return bpctype.IssuerProfile{}, err
	}
	if exists && in.sameProfile(cur) {
		return cur, nil
	}
	p, err := t.Q.PutIssuerProfile(ctx, bpctype.IssuerProfile{
		TenantID: tenantID, LegalName: in.LegalName, Country: in.Country,
		RegistrationID: in.RegistrationID, Website: in.Website,
	})
	if err != nil {
		return bpctype.IssuerProfile{}, err
	}
	ev := IssuerUpdated{IssuerProfile: p, VerificationCleared: exists && cur.IdentityVerifiedAt != nil}
	if err := t.Event(ctx, tenantID, AggregateTenant, tenantID, EventIssuerUpdated, ev); err != nil {
		return bpctype.IssuerProfile{}, err
	}
	return p, nil
}

// IssuerVerified is the payload of issuer.verified: the profile as
// verified, and the values the platform said it checked (equal to the
// profile's, or there is no event).
type IssuerVerified struct {
	bpctype.IssuerProfile
	Checked IssuerInput `json:"checked"`
}

// VerifyIssuer records that the platform checked the company the tenant's
// profile names, at now (again, if it was verified before), audited as
// issuer.verified. checked is what the platform checked: it must equal the
// stored profile member for member (no website and an empty one are the
// same), or the profile changed since the platform read it and nothing is
// verified (CONFLICT) — a tenant cannot swap in another company's name
// between the operator's GET and its verify. A tenant without a profile is
// NOT_FOUND. Only the platform may call it; the API holds it to that.
func VerifyIssuer(ctx context.Context, t Tx, tenantID uuid.UUID, checked IssuerInput, now time.Time) (bpctype.IssuerProfile, error) {
	cur, err := t.Q.LockIssuerProfile(ctx, tenantID)
	if err != nil {
		return bpctype.IssuerProfile{}, err
	}
	if !checked.sameProfile(cur) {
		return bpctype.IssuerProfile{}, errcode.New(errcode.Conflict,
			"the issuer profile changed since it was read: the values checked are not the stored ones; read the profile again (GET /v1/tenants/%s/issuer), check the company it names, and verify those values", tenantID)
	}
	p, err := t.Q.SetIssuerVerified(ctx, tenantID, now)
	if err != nil {
		return bpctype.IssuerProfile{}, err
	}
	if checked.Website != nil && *checked.Website == "" {
		checked.Website = nil
	}
	if err := t.Event(ctx, tenantID, AggregateTenant, tenantID, EventIssuerVerified, IssuerVerified{IssuerProfile: p, Checked: checked}); err != nil {
		return bpctype.IssuerProfile{}, err
	}
	return p, nil
}
