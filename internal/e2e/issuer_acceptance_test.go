package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/internal/service"
)

// publicVersion is what the acceptance test reads of a public version.
type publicVersion struct {
	Status     string `json:"status"`
	SigningKey struct {
		KeyID           string  `json:"key_id"`
		PublicKeyBase64 string  `json:"public_key_base64"`
		TenantID        *string `json:"tenant_id"`
		Status          string  `json:"status"`
	} `json:"signing_key"`
	Verification struct {
		Verified       bool   `json:"verified"`
		Verdict        string `json:"verdict"`
		FailureReason  string `json:"failure_reason"`
		KeyOwnerOK     bool   `json:"key_owner_ok"`
		KeyValidOK     bool   `json:"key_valid_ok"`
		IssuerVerified bool   `json:"issuer_verified"`
		SignatureOK    bool   `json:"signature_ok"`
		Issuer         struct {
			TenantID  string  `json:"tenant_id"`
			LegalName *string `json:"legal_name"`
		} `json:"issuer"`
	} `json:"verification"`
}

// publicJSON reads a version as anyone does, without credentials.
func (h *harness) publicJSON(id string) publicVersion {
	h.t.Helper()
	status, raw := h.raw(http.MethodGet, "/public/v1/passport-versions/"+id, nil, map[string]string{"Accept": "application/json"})
	require.Equal(h.t, http.StatusOK, status, "%s", raw)
	var v publicVersion
	require.NoError(h.t, json.Unmarshal(raw, &v), "%s", raw)
	return v
}

// publicPage reads a version's page as a browser does.
func (h *harness) publicPage(id string) string {
	h.t.Helper()
	status, raw := h.raw(http.MethodGet, "/public/v1/passport-versions/"+id, nil, map[string]string{"Accept": "text/html"})
	require.Equal(h.t, http.StatusOK, status, "%s", raw)
	return string(raw)
}

// verifiedIssuer makes a tenant with an issuer profile under legalName
// that the platform verified, and returns its id.
func (h *harness) verifiedIssuer(legalName string) string {
	h.t.Helper()
	tenant := h.newTenant()
	profile := map[string]any{"legal_name": legalName, "country": "DE", "registration_id": "DE123456789012345"}
	status, raw := h.as(testToken, http.MethodPut, "/v1/tenants/"+tenant+"/issuer", profile)
	require.Equal(h.t, http.StatusOK, status, "%s", raw)
	status, raw = h.as(testToken, http.MethodPost, "/v1/tenants/"+tenant+"/issuer/verify", profile)
	require.Equal(h.t, http.StatusOK, status, "%s", raw)
	return tenant
}

// activeSample runs the sample through the whole pipeline for the harness's
// acting tenant (documents, snapshot, rules, compile, sign, QR) and
// activates the version.
func (h *harness) activeSample(pp bpctype.Passport) bpctype.PassportVersion {
	h.t.Helper()
	sn := h.snapshotOf(h.sampleFacts(), true)
	rules := h.rulesVersion(nmc811.Rules(), nmc811.Tests(), true)
	h.succeeded(h.compile(pp.PassportID, sn.SnapshotID, rules.RulePackageVersionID))
	v := h.signedWithQR(pp.PassportID)
	var active bpctype.PassportVersion
	h.post("/v1/passport-versions/"+v.PassportVersionID.String()+"/activate", map[string]any{}, http.StatusOK, &active)
	require.Equal(h.t, bpctype.PassportActive, active.Status)
	return v
}

// The acceptance of issue 24 (SPEC §16), over HTTP with real jobs:
//
//   - two tenants run the sample, both declaring the same manufacturer;
//     only the one whose identity the platform verified shows green, each
//     passport names its own issuer and is signed by its own tenant's key
//     (the key in that tenant's public directory);
//   - after a rotation, new passports use the new key and the old ones
//     still verify; after a revocation, what the key signed at or after
//     the compromise time does not verify (KEY_REVOKED), what it signed
//     before still does, with the revocation shown.
func TestTwoIssuersOneManufacturer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, pipelineEnv(t))
	maker, impostor := h.newTenant(), h.newTenant()

	setProfile := func(tenant, legalName, reg string) {
		status, raw := h.as(testToken, http.MethodPut, "/v1/tenants/"+tenant+"/issuer", map[string]any{
			"legal_name": legalName, "country": "DE", "registration_id": reg})
		require.Equal(t, http.StatusOK, status, "%s", raw)
	}
	setProfile(maker, "Voltaris Battery Systems GmbH", "DE123456789012345")
	setProfile(impostor, "Northwind Cells GmbH", "DE999999999999999")
	status, raw := h.as(testToken, http.MethodPost, "/v1/tenants/"+maker+"/issuer/verify", map[string]any{
		"legal_name": "Voltaris Battery Systems GmbH", "country": "DE", "registration_id": "DE123456789012345"})
	require.Equal(t, http.StatusOK, status, "%s", raw)

	hm, hi := h.forTenant(maker), h.forTenant(impostor)
	ppMaker, ppImpostor := hm.passport(), hi.passport()
	vm, vi := hm.activeSample(ppMaker), hi.activeSample(ppImpostor)

	for _, c := range []struct {
		tenant  string
		v       bpctype.PassportVersion
		verdict string
		issuer  string
	}{
		{maker, vm, "VERIFIED", "Voltaris Battery Systems GmbH"},
		{impostor, vi, "ISSUER_NOT_VERIFIED", "Northwind Cells GmbH"},
	} {
		id := c.v.PassportVersionID.String()
		p := h.publicJSON(id)
		require.Equal(t, c.verdict, p.Verification.Verdict, "%s: %+v", c.issuer, p.Verification)
		require.Equal(t, c.verdict == "VERIFIED", p.Verification.Verified)
		require.True(t, p.Verification.SignatureOK && p.Verification.KeyOwnerOK && p.Verification.KeyValidOK, c.issuer)
		require.Equal(t, c.tenant, p.Verification.Issuer.TenantID, "the passport names its own issuer")
		require.Equal(t, c.issuer, *p.Verification.Issuer.LegalName)

		// Signed by its tenant's own key, which that tenant's directory
		// publishes (and the other's does not).
		require.Equal(t, c.v.SigningKeyID, p.SigningKey.KeyID)
		require.NotNil(t, p.SigningKey.TenantID)
		require.Equal(t, c.tenant, *p.SigningKey.TenantID)
		var dir struct {
			TenantID string `json:"tenant_id"`
			Keys     []struct {
				KeyID           string `json:"key_id"`
				PublicKeyBase64 string `json:"public_key_base64"`
			} `json:"keys"`
		}
		status, raw := h.raw(http.MethodGet, "/public/v1/issuers/"+c.tenant, nil, nil)
		require.Equal(t, http.StatusOK, status, "%s", raw)
		require.NoError(t, json.Unmarshal(raw, &dir))
		require.Len(t, dir.Keys, 1, "%s", raw)
		require.Equal(t, c.v.SigningKeyID, dir.Keys[0].KeyID)
		require.Equal(t, *c.v.SigningPublicKey, dir.Keys[0].PublicKeyBase64)

		page := h.publicPage(id)
		require.Contains(t, page, "Issued by <strong><bdi>"+c.issuer+"</bdi></strong>, DE")
		if c.verdict == "VERIFIED" {
			require.Contains(t, page, `id="verdict">VERIFIED<`)
			require.NotContains(t, page, "Declared manufacturer")
		} else {
			require.Contains(t, page, `id="verdict">SIGNED — ISSUER NOT VERIFIED<`)
			require.NotContains(t, page, `id="verdict">VERIFIED`)
			require.Contains(t, page, `Declared manufacturer: <strong id="manufacturer"><bdi>Voltaris Battery Systems GmbH</bdi></strong>`,
				"the payload's manufacturer is shown beside an issuer that is someone else")
		}
	}
	require.NotEqual(t, vm.SigningKeyID, vi.SigningKeyID)

	// A rotation: the maker's next passport names the new key; the first
	// still verifies (its key retired, not revoked).
	status, raw = h.as(testToken, http.MethodPost, "/v1/signing-keys:rotate", map[string]any{"tenant_id": maker})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	var rotated bpctype.SigningKey
	require.NoError(t, json.Unmarshal(raw, &rotated))
	compromised := time.Now().UTC().Truncate(time.Second).Add(-time.Second)
	vm2 := hm.activeSample(ppMaker)
	require.Equal(t, rotated.KeyID, vm2.SigningKeyID, "new passports use the new key")
	require.NotEqual(t, vm.SigningKeyID, vm2.SigningKeyID)
	p := h.publicJSON(vm.PassportVersionID.String())
	require.Equal(t, "SUPERSEDED", p.Status)
	require.Equal(t, "retired", p.SigningKey.Status)
	require.Equal(t, "VERIFIED", p.Verification.Verdict, "an old passport verifies after the rotation")
	require.Equal(t, "VERIFIED", h.publicJSON(vm2.PassportVersionID.String()).Verification.Verdict)

	// A cache may keep the green answer but must ask again before showing
	// it (the revocation below changes it).
	jsonAccept := map[string]string{"Accept": "application/json"}
	status, hdr, _ := h.headers(http.MethodGet, "/public/v1/passport-versions/"+vm2.PassportVersionID.String(), nil, jsonAccept)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "public, max-age=0, s-maxage=60", hdr.Get("Cache-Control"), "browsers revalidate; a CDN may hold it a minute")
	greenETag := hdr.Get("ETag")
	require.NotEmpty(t, greenETag)
	status, _, _ = h.headers(http.MethodGet, "/public/v1/passport-versions/"+vm2.PassportVersionID.String(), nil,
		map[string]string{"Accept": "application/json", "If-None-Match": greenETag})
	require.Equal(t, http.StatusNotModified, status, "unchanged: revalidated without the body")

	// The new key is revoked as compromised since before it signed vm2:
	// vm2 no longer verifies, and the page says why.
	status, raw = h.as(testToken, http.MethodPost, "/v1/signing-keys/"+rotated.KeyID+"/revoke", map[string]any{
		"tenant_id": maker, "reason": "key material leaked", "compromised_at": compromised.Format(time.RFC3339)})
	require.Equal(t, http.StatusOK, status, "%s", raw)
	status, _, raw = h.headers(http.MethodGet, "/public/v1/passport-versions/"+vm2.PassportVersionID.String(), nil,
		map[string]string{"Accept": "application/json", "If-None-Match": greenETag})
	require.Equal(t, http.StatusOK, status, "a cache revalidating the green answer gets the new one: %s", raw)
	p = h.publicJSON(vm2.PassportVersionID.String())
	require.False(t, p.Verification.Verified)
	require.Equal(t, "NOT_VERIFIED", p.Verification.Verdict)
	require.Equal(t, "KEY_REVOKED", p.Verification.FailureReason)
	require.False(t, p.Verification.KeyValidOK)
	require.True(t, p.Verification.SignatureOK, "the signature itself still checks; the key does not vouch for it")
	page := h.publicPage(vm2.PassportVersionID.String())
	require.Contains(t, page, `id="verdict">NOT VERIFIED<`)
	require.Contains(t, page, `id="revocation"`)
	require.Contains(t, page, "key material leaked")

	// The first key revoked as compromised from now on: what it signed
	// before still verifies, with the revocation shown.
	status, raw = h.as(testToken, http.MethodPost, "/v1/signing-keys/"+vm.SigningKeyID+"/revoke", map[string]any{
		"tenant_id": maker, "reason": "retired hardware disposed of"})
	require.Equal(t, http.StatusOK, status, "%s", raw)
	p = h.publicJSON(vm.PassportVersionID.String())
	require.Equal(t, "VERIFIED", p.Verification.Verdict, "signed before the compromise time: %+v", p.Verification)
	require.Equal(t, "revoked", p.SigningKey.Status)
	page = h.publicPage(vm.PassportVersionID.String())
	require.Contains(t, page, `id="verdict">VERIFIED<`)
	require.Contains(t, page, `id="revocation"`)

	// The impostor, untouched by the maker's keys, stays amber; a change
	// of the maker's profile clears its verification and turns it amber.
	require.Equal(t, "ISSUER_NOT_VERIFIED", h.publicJSON(vi.PassportVersionID.String()).Verification.Verdict)
	setProfile(maker, "Voltaris Battery Systems GmbH", "DE000000000000001")
	p = h.publicJSON(vm.PassportVersionID.String())
	require.Equal(t, "ISSUER_NOT_VERIFIED", p.Verification.Verdict, "a changed profile is no longer verified")
	require.True(t, strings.HasPrefix(*p.Verification.Issuer.LegalName, "Voltaris"))
}
