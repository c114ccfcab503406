package public_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/internal/fixture"
	"github.com/bpc-platform/bpc/internal/http/public"
	"github.com/bpc-platform/bpc/store"
)

func (e env) version(t *testing.T, id uuid.UUID) public.VerifiedVersion {
	t.Helper()
	rec := e.get(t, versionURL(id), "application/json")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var v public.VerifiedVersion
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &v))
	return v
}

func (e env) page(t *testing.T, id uuid.UUID) string {
	t.Helper()
	rec := e.get(t, versionURL(id), "text/html")
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.String()
}

// ownKey makes the fixture's key tenantID's own, as a per-tenant key
// created by the service would be.
func (e env) ownKey(t *testing.T, tenantID uuid.UUID) {
	t.Helper()
	e.Exec(t, `UPDATE signing_keys SET tenant_id = $1, private_key_encrypted = '\x00' WHERE key_id = 'fixture-key'`, tenantID)
}

// Two tenants compile the same sample, both declaring the manufacturer
// "Voltaris Battery Systems GmbH": only the one whose identity the platform
// verified is green; each names its own issuer.
func TestOnlyTheVerifiedIssuerIsGreen(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Voltaris pack") // the dev tenant: Voltaris, verified
	other, err := e.Store.CreateTenant(e.Ctx, "copycat", "Copycat tenant")
	require.NoError(t, err)
	copied := fixture.ActiveNMC811(t, e.Store, e.River, other.TenantID, "Voltaris pack")
	fixture.Issuer(t, e.Store, e.River, other.TenantID, "Copycat Cells Ltd", false)

	real := e.version(t, e.active.Version.PassportVersionID)
	require.Equal(t, verify.VerdictVerified, real.Verification.Verdict)
	require.True(t, real.Verification.Verified && real.Verification.KeyOwnerOK && real.Verification.KeyValidOK && real.Verification.IssuerVerified)
	require.Equal(t, "Voltaris Battery Systems GmbH", *real.Verification.Issuer.LegalName)
	require.True(t, real.Verification.Issuer.IdentityVerified)
	require.Equal(t, "/public/v1/issuers/"+store.DevTenantID.String(), real.Verification.Issuer.DirectoryURL)
	require.Empty(t, real.Verification.FailureReason)

	fake := e.version(t, copied.Version.PassportVersionID)
	require.Equal(t, verify.VerdictIssuerNotVerified, fake.Verification.Verdict)
	require.Equal(t, verify.ReasonIssuerNotVerified, fake.Verification.FailureReason)
	require.False(t, fake.Verification.Verified)
	require.True(t, fake.Verification.SignatureOK && fake.Verification.KeyOwnerOK && fake.Verification.KeyValidOK)
	require.False(t, fake.Verification.IssuerVerified)
	require.Equal(t, other.TenantID, fake.Verification.Issuer.TenantID)
	require.Equal(t, "Copycat Cells Ltd", *fake.Verification.Issuer.LegalName)

	realPage, fakePage := e.page(t, e.active.Version.PassportVersionID), e.page(t, copied.Version.PassportVersionID)
	require.Contains(t, realPage, `class="banner ok" id="verdict">VERIFIED`)
	require.Contains(t, realPage, "Issued by <strong><bdi>Voltaris Battery Systems GmbH</bdi></strong>, DE, ")
	require.NotContains(t, realPage, `id="manufacturer"`, "the declared manufacturer is the issuer")
	require.Contains(t, fakePage, `class="banner amber" id="verdict">SIGNED — ISSUER NOT VERIFIED`)
	require.NotContains(t, fakePage, `banner ok`)
	require.Contains(t, fakePage, "Issued by <strong><bdi>Copycat Cells Ltd</bdi></strong>, DE, ")
	require.Contains(t, fakePage, "(identity NOT verified)")
	require.Contains(t, fakePage, `Declared manufacturer: <strong id="manufacturer"><bdi>Voltaris Battery Systems GmbH</bdi></strong> (not the issuer)`)
	require.Contains(t, fakePage, `href="/public/v1/issuers/`+other.TenantID.String()+`"`)

	// Without a profile the page names the tenant and says it has not
	// identified itself; never green.
	e.Exec(t, `DELETE FROM issuer_profiles WHERE tenant_id = $1`, other.TenantID)
	require.Equal(t, verify.VerdictIssuerNotVerified, e.version(t, copied.Version.PassportVersionID).Verification.Verdict)
	require.Contains(t, e.page(t, copied.Version.PassportVersionID), "Issued by tenant <strong><bdi>Copycat tenant</bdi></strong>, which has not identified itself as an issuer")

	// A tenant's key signing another tenant's version: not the owner, red.
	e.ownKey(t, store.DevTenantID)
	fake = e.version(t, copied.Version.PassportVersionID)
	require.Equal(t, verify.VerdictNotVerified, fake.Verification.Verdict)
	require.Equal(t, verify.ReasonKeyNotOwned, fake.Verification.FailureReason)
	require.False(t, fake.Verification.KeyOwnerOK)
	require.Contains(t, e.page(t, copied.Version.PassportVersionID), "key owner: key fixture-key belongs to tenant "+store.DevTenantID.String())
	require.Equal(t, verify.VerdictVerified, e.version(t, e.active.Version.PassportVersionID).Verification.Verdict, "the owner's own version")
}

// A revoked key: versions it signed at or after the compromise time are
// KEY_REVOKED; earlier ones verify, with the revocation shown. Each change
// shows at once, though the handler remembers verifications; so does a
// change of the issuer's profile, which clears its verification.
func TestRevocationAndVerificationShowAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	id := e.active.Version.PassportVersionID
	e.ownKey(t, store.DevTenantID)
	require.Equal(t, verify.VerdictVerified, e.version(t, id).Verification.Verdict)
	signed := *e.active.Version.SignedAt

	e.Exec(t, `UPDATE signing_keys SET status = 'revoked', revoked_at = now(), compromised_at = $1, revocation_reason = 'laptop stolen'
		WHERE key_id = 'fixture-key'`, signed.Add(-time.Minute))
	v := e.version(t, id)
	require.Equal(t, verify.VerdictNotVerified, v.Verification.Verdict)
	require.Equal(t, "KEY_REVOKED", v.Verification.FailureReason)
	require.False(t, v.Verification.KeyValidOK)
	require.True(t, v.Verification.SignatureOK, "the signature itself still checks out")
	page := e.page(t, id)
	require.Contains(t, page, `class="banner bad" id="verdict">NOT VERIFIED`)
	require.Contains(t, page, "key validity: KEY_REVOKED")
	require.Contains(t, page, `id="revocation"`)
	require.Contains(t, page, "(<bdi>laptop stolen</bdi>)", "the reason is isolated from the sentence around it")

	// Compromised only after this version was signed: it verifies, and
	// the page still shows the revocation.
	e.Exec(t, `UPDATE signing_keys SET compromised_at = $1 WHERE key_id = 'fixture-key'`, signed.Add(time.Hour))
	v = e.version(t, id)
	require.Equal(t, verify.VerdictVerified, v.Verification.Verdict)
	require.True(t, v.Verification.KeyValidOK)
	require.NotNil(t, v.SigningKey.RevokedAt)
	require.Equal(t, "laptop stolen", *v.SigningKey.RevocationReason)
	page = e.page(t, id)
	require.Contains(t, page, `class="banner ok" id="verdict">VERIFIED`)
	require.Contains(t, page, `id="revocation"`)

	// Signed exactly at the compromise time: revoked.
	e.Exec(t, `UPDATE signing_keys SET compromised_at = $1 WHERE key_id = 'fixture-key'`, signed)
	require.Equal(t, "KEY_REVOKED", e.version(t, id).Verification.FailureReason)
	e.Exec(t, `UPDATE signing_keys SET status = 'active', revoked_at = NULL, compromised_at = NULL, revocation_reason = NULL
		WHERE key_id = 'fixture-key'`)
	require.Equal(t, verify.VerdictVerified, e.version(t, id).Verification.Verdict)

	// A change of the profile clears the verification: amber at once.
	fixture.Issuer(t, e.Store, e.River, store.DevTenantID, "Voltaris Battery Systems AG", false)
	e.sync(t)
	require.Equal(t, verify.VerdictIssuerNotVerified, e.version(t, id).Verification.Verdict)
	fixture.Issuer(t, e.Store, e.River, store.DevTenantID, "Voltaris Battery Systems AG", true)
	e.sync(t)
	require.Equal(t, verify.VerdictVerified, e.version(t, id).Verification.Verdict)
}

func TestKeyDirectory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	dir := "/public/v1/issuers/" + store.DevTenantID.String()

	// The fixture's key is the platform's legacy key: in no directory.
	rec := e.get(t, dir, "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var d verify.Directory
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &d))
	require.Empty(t, d.Keys)
	require.Equal(t, "Voltaris Battery Systems GmbH", *d.LegalName)

	e.ownKey(t, store.DevTenantID)
	rec = e.get(t, dir, "text/html") // JSON whatever the client prefers
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	require.Equal(t, public.CacheControl(cdnMaxAge), rec.Header().Get("Cache-Control"))
	require.NotEmpty(t, rec.Header().Get("ETag"))
	require.Equal(t, http.StatusNotModified, e.get(t, dir, "", "If-None-Match", rec.Header().Get("ETag")).Code)

	var raw map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &raw))
	require.ElementsMatch(t, []string{"tenant_id", "legal_name", "country", "registration_id", "website",
		"identity_verified", "identity_verified_at", "keys"}, keysOf(raw))
	keys := raw["keys"].([]any)
	require.Len(t, keys, 1)
	k := keys[0].(map[string]any)
	require.ElementsMatch(t, []string{"key_id", "alg", "public_key_base64", "status", "created_at", "retired_at",
		"revoked_at", "compromised_at"}, keysOf(k))
	require.Equal(t, "fixture-key", k["key_id"])
	require.Equal(t, e.active.Signer.PublicKeyBase64(), k["public_key_base64"])
	require.Equal(t, "active", k["status"])
	require.Equal(t, true, raw["identity_verified"])
	require.NotContains(t, strings.ToLower(rec.Body.String()), "private")
	// What the service serves is what bpc verify --keys reads.
	_, err := verify.ParseDirectory(rec.Body.Bytes())
	require.NoError(t, err)

	other, err := e.Store.CreateTenant(e.Ctx, "empty", "Empty tenant")
	require.NoError(t, err)
	for _, target := range []string{
		"/public/v1/issuers/" + uuid.NewString(),              // unknown tenant
		"/public/v1/issuers/" + store.SystemTenantID.String(), // the system tenant
		"/public/v1/issuers/" + other.TenantID.String(),       // neither profile nor keys
		"/public/v1/issuers/not-a-uuid",
		"/public/v1/issuers/" + strings.Repeat("a", 5000),
	} {
		rec := e.get(t, target, "")
		require.Equal(t, http.StatusNotFound, rec.Code, target)
		require.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	}
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
