package public

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPageIsolatesTenantText: every string a tenant controls that the page
// shows in a sentence — the issuer's legal name and registration id, the
// tenant's name, the declared manufacturer, the revocation reason — is in
// a <bdi>, so a right-to-left override in it cannot reorder the text
// around it (the verdict's words, "not the issuer").
func TestPageIsolatesTenantText(t *testing.T) {
	t.Parallel()
	const rlo = "\u202e"
	legal, reg := "Voltaris"+rlo+"HbmG", "DE1"+rlo+"23"
	tenantName, maker, reason := "tenant"+rlo+"eman", "Maker"+rlo+"AG", "stolen"+rlo+"ton"
	now := time.Now().UTC()
	country := "DE"
	page := func(issuer *IssuerView) string {
		t.Helper()
		v := VerifiedVersion{IssuedAt: now, Product: Product{Name: "Pack"},
			SigningKey:   &VerifyingKey{KeyID: "k1", Status: "revoked", RevokedAt: &now, CompromisedAt: &now, RevocationReason: &reason},
			Verification: Verification{Issuer: issuer}}
		b, err := render(page{Title: "Pack", Version: &v, Manufacturer: maker})
		require.NoError(t, err)
		return string(b)
	}

	p := page(&IssuerView{TenantName: tenantName, LegalName: &legal, Country: &country, RegistrationID: &reg})
	for _, s := range []string{legal, reg, maker, reason} {
		require.Contains(t, p, "<bdi>"+s+"</bdi>", "%q", s)
		require.Equal(t, 1, strings.Count(p, s), "%q is shown once, isolated", s)
	}
	p = page(&IssuerView{TenantName: tenantName})
	require.Contains(t, p, "<bdi>"+tenantName+"</bdi>")
	require.Equal(t, 1, strings.Count(p, tenantName))
}
