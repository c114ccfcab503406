package verify

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCheckTrust(t *testing.T) {
	t.Parallel()
	const tenant, other = "00000000-0000-0000-0000-0000000000aa", "00000000-0000-0000-0000-0000000000bb"
	signed := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	before, after := signed.Add(-time.Hour), signed.Add(time.Hour)
	verifiedAt := signed
	issuer := &Issuer{TenantID: tenant, LegalName: "Voltaris", Country: "DE", RegistrationID: "DE1", IdentityVerifiedAt: &verifiedAt}
	unverified := &Issuer{TenantID: tenant, LegalName: "Voltaris", Country: "DE", RegistrationID: "DE1"}
	own := KeyRecord{Known: true, TenantID: tenant, Status: "active"}
	revoked := func(compromised time.Time) KeyRecord {
		return KeyRecord{Known: true, TenantID: tenant, Status: "revoked", RevokedAt: &after, CompromisedAt: &compromised, RevocationReason: "stolen"}
	}
	for _, tc := range []struct {
		name     string
		in       TrustInput
		checksOK bool
		verdict  string
		reason   string
		detail   string
	}{
		{"own key, verified issuer", TrustInput{Key: own, Issuer: issuer}, true, VerdictVerified, "", "belongs to tenant"},
		{"bytes fail", TrustInput{Key: own, Issuer: issuer}, false, VerdictNotVerified, ReasonChecksFailed, ""},
		{"legacy key", TrustInput{Key: KeyRecord{Known: true}, Issuer: issuer}, true, VerdictVerified, "", "legacy key"},
		{"unverified issuer", TrustInput{Key: own, Issuer: unverified}, true, VerdictIssuerNotVerified, ReasonIssuerNotVerified, "not verified"},
		{"no profile", TrustInput{Key: own}, true, VerdictIssuerNotVerified, ReasonIssuerNotVerified, "has not identified itself"},
		{"another tenant's key", TrustInput{Key: KeyRecord{Known: true, TenantID: other}, Issuer: issuer}, true, VerdictNotVerified, ReasonKeyNotOwned, "not to the receipt's tenant"},
		{"receipt of another tenant", TrustInput{VersionTenantID: other, Key: own, Issuer: issuer}, true, VerdictNotVerified, ReasonKeyNotOwned, "the version belongs to tenant"},
		{"unknown key", TrustInput{Issuer: issuer}, true, VerdictNotVerified, ReasonKeyNotOwned, "has no key"},
		{"compromised before signing", TrustInput{Key: revoked(before), Issuer: issuer}, true, VerdictNotVerified, ReasonKeyRevoked, "KEY_REVOKED"},
		{"compromised at signing", TrustInput{Key: revoked(signed), Issuer: issuer}, true, VerdictNotVerified, ReasonKeyRevoked, "at or after"},
		{"compromised after signing", TrustInput{Key: revoked(after), Issuer: issuer}, true, VerdictVerified, "", "before"},
		{"compromised after a claimed time", TrustInput{Key: revoked(after), Issuer: issuer, SignedAtClaimed: true}, true, VerdictNotVerified, ReasonKeyRevoked, "whoever holds a compromised key"},
		{"revoked and unverified", TrustInput{Key: revoked(before), Issuer: unverified}, true, VerdictNotVerified, ReasonKeyRevoked, ""},
	} {
		in := tc.in
		in.ReceiptTenantID, in.SignedAt, in.KeyID = tenant, signed, "k1"
		if in.VersionTenantID == "" {
			in.VersionTenantID = tenant
		}
		tr := CheckTrust(in)
		require.Len(t, tr.Checks, 3, tc.name)
		require.Equal(t, tc.verdict, tr.Verdict(tc.checksOK), tc.name)
		require.Equal(t, tc.reason, tr.Reason(tc.checksOK), tc.name)
		var all []string
		for _, c := range tr.Checks {
			all = append(all, c.String())
		}
		require.Contains(t, strings.Join(all, "\n"), tc.detail, tc.name)
	}
}

func TestParseDirectory(t *testing.T) {
	t.Parallel()
	good := `{"tenant_id":"t1","legal_name":"V","country":"DE","registration_id":"1","website":null,"identity_verified":true,` +
		`"identity_verified_at":"2026-11-24T09:00:00Z","keys":[{"key_id":"k1","alg":"ED25519",` +
		`"public_key_base64":"QfSayICzjfuvC0vFNHY+spabYYbWr2zcjYD9SUSuyNI=","status":"active","created_at":"2026-11-24T09:00:00Z",` +
		`"retired_at":null,"revoked_at":null,"compromised_at":null}]}`
	d, err := ParseDirectory([]byte(good))
	require.NoError(t, err)
	require.Equal(t, "V", d.Issuer().LegalName)
	_, ok := d.Key("k1")
	require.True(t, ok)
	for name, tc := range map[string]struct{ from, to, says string }{
		"unknown member":   {`"keys":`, `"x":1,"keys":`, "unknown field"},
		"bad base64":       {"QfSayICzjfuvC0vFNHY+spabYYbWr2zcjYD9SUSuyNI=", "QfSay", "public_key_base64"},
		"unpadded base64":  {"QfSayICzjfuvC0vFNHY+spabYYbWr2zcjYD9SUSuyNI=", "QfSayICzjfuvC0vFNHY+spabYYbWr2zcjYD9SUSuyNI", "public_key_base64"},
		"bad status":       {`"status":"active"`, `"status":"lost"`, "status"},
		"revoked no time":  {`"status":"active"`, `"status":"revoked"`, "without compromised_at"},
		"bad alg":          {`"ED25519"`, `"RSA"`, "alg"},
		"no key id":        {`"key_id":"k1"`, `"key_id":""`, "no key_id"},
		"flag disagrees":   {`"identity_verified":true`, `"identity_verified":false`, "disagree"},
		"trailing":         {`]}`, `]}{}`, "after its JSON object"},
		"not an object":    {good, `[]`, "not a directory document"},
		"twice the key id": {`"retired_at":null,"revoked_at":null,"compromised_at":null}]`, `"retired_at":null,"revoked_at":null,"compromised_at":null},{"key_id":"k1","alg":"ED25519","public_key_base64":"QfSayICzjfuvC0vFNHY+spabYYbWr2zcjYD9SUSuyNI=","status":"active","created_at":"2026-11-24T09:00:00Z","retired_at":null,"revoked_at":null,"compromised_at":null}]`, "listed twice"},
	} {
		doc := strings.Replace(good, tc.from, tc.to, 1)
		require.NotEqual(t, good, doc, name)
		_, err := ParseDirectory([]byte(doc))
		require.ErrorContains(t, err, tc.says, name)
	}
	_, err = ParseDirectory([]byte(`{"tenant_id":"` + strings.Repeat("a", MaxDirectoryBytes) + `"}`))
	require.ErrorContains(t, err, "more than")
}
