package demo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/bpc-platform/bpc/apiclient"
)

// writerKeyLifetime bounds the demo's key in case the walk stops before it
// revokes it.
const writerKeyLifetime = time.Hour

// writerKey creates a writer key of the tenant with the platform token and
// switches the walk to it: the pipeline runs as a battery maker's own
// integration would, not as the platform operator.
func (d *walk) writerKey(ctx context.Context) (string, error) {
	var k struct {
		APIKeyID string `json:"api_key_id"`
		Prefix   string `json:"prefix"`
		Token    string `json:"token"`
	}
	body := map[string]any{"tenant_id": d.platform.TenantID, "name": "bpc demo " + time.Now().UTC().Format(time.RFC3339),
		"role": "writer", "expires_at": time.Now().Add(writerKeyLifetime).UTC()}
	if err := d.platform.Do(ctx, http.MethodPost, "/v1/api-keys", body, &k); err != nil {
		return "", err
	}
	if k.Token == "" || k.APIKeyID == "" {
		return "", errors.New("POST /v1/api-keys returned no token")
	}
	tenant := *d.platform
	tenant.Token = k.Token
	d.c, d.keyID = &tenant, k.APIKeyID
	return "writer key " + k.Prefix + " (the pipeline runs with it)", nil
}

// revokeKey revokes the demo's key with the platform token.
func (d *walk) revokeKey(ctx context.Context) (string, error) {
	if err := d.platform.Do(ctx, http.MethodDelete, d.platform.TenantPath(apiclient.Path("/v1/api-keys", d.keyID)), nil, nil); err != nil {
		return "", err
	}
	return "writer key revoked", nil
}

// The issuer the demo's tenant declares itself as: the maker the NMC811
// sample's documents name.
const (
	demoIssuerName           = "Voltaris Battery Systems GmbH"
	demoIssuerCountry        = "DE"
	demoIssuerRegistrationID = "DE123456789012345"
	demoIssuerWebsite        = "https://voltaris.example"
)

// issuer sets the tenant's issuer profile and verifies it, both with the
// platform token: the demo plays the platform operator who checked the
// company, so that its passport can be green (SPEC §16). A real tenant's
// admin sets the profile; only the platform verifies it.
func (d *walk) issuer(ctx context.Context) (string, error) {
	path := apiclient.Path("/v1/tenants", d.platform.TenantID) + "/issuer"
	body := map[string]any{"legal_name": demoIssuerName, "country": demoIssuerCountry,
		"registration_id": demoIssuerRegistrationID, "website": demoIssuerWebsite}
	if err := d.platform.Do(ctx, http.MethodPut, path, body, nil); err != nil {
		return "", err
	}
	if err := d.platform.Do(ctx, http.MethodPost, path+"/verify", nil, nil); err != nil {
		return "", err
	}
	return demoIssuerName + " (" + demoIssuerCountry + "), identity verified by the platform", nil
}

// publicPage reads the version's public verification, without credentials.
func (d *walk) publicPage(ctx context.Context) (string, error) {
	anonymous := *d.platform
	anonymous.Token = ""
	var p struct {
		Status       string `json:"status"`
		Verification struct {
			Verified bool   `json:"verified"`
			Verdict  string `json:"verdict"`
		} `json:"verification"`
	}
	if err := anonymous.Do(ctx, http.MethodGet, d.publicPath(), nil, &p); err != nil {
		return "", err
	}
	if !p.Verification.Verified {
		return "", fmt.Errorf("the public verification of %s says %s", d.version.PassportVersionID, p.Verification.Verdict)
	}
	return "VERIFIED without credentials (" + p.Status + ")", nil
}

func (d *walk) publicPath() string {
	return apiclient.Path("/public/v1/passport-versions", d.version.PassportVersionID)
}
