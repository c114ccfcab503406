package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/service"
)

// TestIssuerProfilesOverHTTP: a tenant's admin sets its own profile (another
// tenant's is 404, a writer key 403), the platform alone verifies it (a
// tenant key is 403) and only the values it checked (a profile changed
// since is 409, nothing verified), a change clears the verification, and
// the public key directory shows the profile.
func TestIssuerProfilesOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, map[string]string{"BPC_RATE_LIMIT_RPS": "0"})
	tenant, other := h.newTenant(), h.newTenant()
	admin, writer := h.createKey(tenant, "admin", nil), h.createKey(tenant, "writer", nil)
	otherAdmin := h.createKey(other, "admin", nil)
	path := "/v1/tenants/" + tenant + "/issuer"
	profile := map[string]any{"legal_name": "Voltaris Battery Systems GmbH", "country": "DE",
		"registration_id": "DE123456789012345", "website": "https://voltaris.example"}

	status, raw := h.as(admin.Token, http.MethodGet, path, nil)
	require.Equal(t, http.StatusNotFound, status, "no profile yet: %s", raw)
	status, raw = h.raw(http.MethodGet, "/public/v1/issuers/"+tenant, nil, nil)
	require.Equal(t, http.StatusNotFound, status, "neither profile nor keys: %s", raw)

	status, raw = h.as(otherAdmin.Token, http.MethodPut, path, profile)
	require.Equal(t, http.StatusNotFound, status, "another tenant's profile: %s", raw)
	status, raw = h.as(otherAdmin.Token, http.MethodGet, path, nil)
	require.Equal(t, http.StatusNotFound, status, "%s", raw)
	status, raw = h.as(writer.Token, http.MethodPut, path, profile)
	require.Equal(t, http.StatusForbidden, status, "a writer key: %s", raw)
	status, raw = h.as(admin.Token, http.MethodGet, path+"?tenant_id="+other, nil)
	require.Equal(t, http.StatusForbidden, status, "naming another tenant: %s", raw)
	status, raw = h.as(testToken, http.MethodGet, path+"?tenant_id="+other, nil)
	require.Equal(t, http.StatusNotFound, status, "the platform naming another tenant than the path's: %s", raw)

	for field, bad := range map[string]any{"country": "XX", "website": "http://voltaris.example", "legal_name": "a\u0007b"} {
		body := map[string]any{}
		for k, v := range profile {
			body[k] = v
		}
		body[field] = bad
		status, raw = h.as(admin.Token, http.MethodPut, path, body)
		require.Equal(t, http.StatusUnprocessableEntity, status, "%s: %s", field, raw)
		require.Contains(t, string(raw), field)
	}
	status, raw = h.as(admin.Token, http.MethodPut, path, map[string]any{"legal_name": strings.Repeat("x", 1<<20), "country": "DE", "registration_id": "1"})
	require.GreaterOrEqual(t, status, 400, "a huge body: %s", raw[:min(len(raw), 200)])
	require.Less(t, status, 500)

	status, raw = h.as(admin.Token, http.MethodPut, path, profile)
	require.Equal(t, http.StatusOK, status, "%s", raw)

	status, raw = h.as(admin.Token, http.MethodPost, path+"/verify", profile)
	require.Equal(t, http.StatusForbidden, status, "a tenant cannot verify itself: %s", raw)
	status, raw = h.as(otherAdmin.Token, http.MethodPost, path+"/verify", profile)
	require.Equal(t, http.StatusForbidden, status, "%s", raw)
	status, raw = h.as(testToken, http.MethodPost, "/v1/tenants/"+other+"/issuer/verify", profile)
	require.Equal(t, http.StatusNotFound, status, "no profile to verify: %s", raw)

	var p struct {
		IdentityVerifiedAt *string `json:"identity_verified_at"`
	}
	// The verify names what the operator checked: none at all is 400
	// MALFORMED_JSON, a malformed body 422, and nothing is verified.
	status, raw = h.as(testToken, http.MethodPost, path+"/verify", nil)
	require.Equal(t, http.StatusBadRequest, status, "no body: %s", raw)
	require.Equal(t, "MALFORMED_JSON", errorCode(t, raw))
	for name, bad := range map[string]any{
		"no legal_name":   map[string]any{"country": "DE", "registration_id": "DE123456789012345"},
		"a bad country":   map[string]any{"legal_name": "Voltaris Battery Systems GmbH", "country": "de", "registration_id": "DE123456789012345"},
		"an unknown name": map[string]any{"legal_name": "Voltaris Battery Systems GmbH", "country": "DE", "registration_id": "DE123456789012345", "verified": true},
	} {
		status, raw = h.as(testToken, http.MethodPost, path+"/verify", bad)
		require.Equal(t, http.StatusUnprocessableEntity, status, "%s: %s", name, raw)
		require.Equal(t, "VALIDATION_ERROR", errorCode(t, raw), "%s", name)
	}
	// The operator read the profile; the tenant then swaps in another
	// company: the verify of what the operator checked is refused, and
	// the new values stay unverified.
	status, raw = h.as(testToken, http.MethodGet, path, nil)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	var read map[string]any
	require.NoError(t, json.Unmarshal(raw, &read))
	checked := map[string]any{"legal_name": read["legal_name"], "country": read["country"],
		"registration_id": read["registration_id"], "website": read["website"]}
	swapped := map[string]any{"legal_name": "Northwind Cells GmbH", "country": "DE", "registration_id": "DE999999999999999"}
	status, raw = h.as(admin.Token, http.MethodPut, path, swapped)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	status, raw = h.as(testToken, http.MethodPost, path+"/verify", checked)
	require.Equal(t, http.StatusConflict, status, "the profile changed since the GET: %s", raw)
	require.Contains(t, string(raw), `"CONFLICT"`)
	status, raw = h.as(testToken, http.MethodGet, path, nil)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	require.Contains(t, string(raw), `"identity_verified_at":null`, "nothing verified")
	require.Contains(t, string(raw), `"legal_name":"Northwind Cells GmbH"`)

	status, raw = h.as(admin.Token, http.MethodPut, path, profile)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	status, raw = h.as(testToken, http.MethodPost, path+"/verify", checked)
	require.Equal(t, http.StatusOK, status, "the values checked are the stored ones again: %s", raw)
	require.NoError(t, json.Unmarshal(raw, &p))
	require.NotNil(t, p.IdentityVerifiedAt)

	// The same values keep the verification; a change clears it.
	status, raw = h.as(admin.Token, http.MethodPut, path, profile)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &p))
	require.NotNil(t, p.IdentityVerifiedAt, "same values")

	var dir struct {
		LegalName        string `json:"legal_name"`
		IdentityVerified bool   `json:"identity_verified"`
		Keys             []any  `json:"keys"`
	}
	status, raw = h.raw(http.MethodGet, "/public/v1/issuers/"+tenant, nil, nil)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &dir))
	require.Equal(t, "Voltaris Battery Systems GmbH", dir.LegalName)
	require.True(t, dir.IdentityVerified)
	require.NotNil(t, dir.Keys, "an empty list, never null")

	profile["registration_id"] = "DE999"
	status, raw = h.as(testToken, http.MethodPut, path, profile)
	require.Equal(t, http.StatusOK, status, "the platform may set it too: %s", raw)
	require.NoError(t, json.Unmarshal(raw, &p))
	require.Nil(t, p.IdentityVerifiedAt, "a change clears the verification")
	status, raw = h.as(admin.Token, http.MethodGet, path, nil)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	require.Contains(t, string(raw), `"registration_id":"DE999"`)
	require.Contains(t, string(raw), `"identity_verified_at":null`)
}
