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

// demoIssuerEnvs are the environments whose tenant the demo may give its
// made-up issuer: nowhere else does it write or verify a profile.
var demoIssuerEnvs = map[string]bool{"dev": true, "test": true}

// issuer, in dev or test (the environment readiness tells the platform
// token), sets the tenant's issuer profile and verifies it, both with the
// platform token: the demo plays the platform operator who checked the
// company, so that its passport can be green (SPEC §16). A real tenant's
// admin sets the profile; only the platform verifies it, after checking
// the company — which the demo cannot do, so in any other environment
// (prod, or a service that does not say) it leaves the tenant's profile
// as it is and goes on only if the platform verified it.
func (d *walk) issuer(ctx context.Context) (string, error) {
	path := apiclient.Path("/v1/tenants", d.platform.TenantID) + "/issuer"
	if !demoIssuerEnvs[d.env] {
		return d.existingIssuer(ctx, path)
	}
	body := map[string]any{"legal_name": demoIssuerName, "country": demoIssuerCountry,
		"registration_id": demoIssuerRegistrationID, "website": demoIssuerWebsite}
	if err := d.platform.Do(ctx, http.MethodPut, path, body, nil); err != nil {
		return "", err
	}
	// The verify names the values checked: those just set.
	if err := d.platform.Do(ctx, http.MethodPost, path+"/verify", body, nil); err != nil {
		return "", err
	}
	return demoIssuerName + " (" + demoIssuerCountry + "), identity verified by the platform (BPC_ENV=" + d.env + ")", nil
}

// existingIssuer reads the tenant's issuer profile without changing it:
// outside dev and test the demo runs only for a tenant the platform
// already verified.
func (d *walk) existingIssuer(ctx context.Context, path string) (string, error) {
	env := d.env
	if env == "" {
		env = "not said by the service"
	}
	var p struct {
		LegalName          string  `json:"legal_name"`
		Country            string  `json:"country"`
		IdentityVerifiedAt *string `json:"identity_verified_at"`
	}
	err := d.platform.Do(ctx, http.MethodGet, path, nil, &p)
	switch {
	case apiclient.IsStatus(err, http.StatusNotFound):
		return "", fmt.Errorf("the service's environment is %s: the demo sets and verifies its sample issuer only in dev or test, "+
			"and tenant %s has no issuer profile (its admin sets it; the platform verifies it after checking the company)", env, d.platform.TenantID)
	case err != nil:
		return "", err
	case p.IdentityVerifiedAt == nil:
		return "", fmt.Errorf("the service's environment is %s: the demo sets and verifies its sample issuer only in dev or test, "+
			"and the issuer profile of tenant %s (%s) is not verified, so its passports cannot be VERIFIED", env, d.platform.TenantID, p.LegalName)
	}
	return p.LegalName + " (" + p.Country + "), verified by the platform, left as it is (environment " + env + ")", nil
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
