package e2e

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// bodies records the raw responses a test received, to search them for
// what must never be answered.
type bodies []string

func (b *bodies) as(h *harness, token, method, path string, body any) (int, []byte) {
	h.t.Helper()
	status, raw := h.as(token, method, path, body)
	*b = append(*b, string(raw))
	return status, raw
}

func signingKeysOf(t *testing.T, raw []byte) map[string]bpctype.SigningKey {
	t.Helper()
	var list struct {
		Items []bpctype.SigningKey `json:"items"`
	}
	require.NoError(t, json.Unmarshal(raw, &list), "%s", raw)
	out := map[string]bpctype.SigningKey{}
	for _, k := range list.Items {
		out[k.KeyID] = k
	}
	return out
}

// requireVerifies checks v's stored signature against the public key
// keyID is listed with.
func requireVerifies(t *testing.T, h *harness, v bpctype.PassportVersion, keys map[string]bpctype.SigningKey) {
	t.Helper()
	k, ok := keys[v.SigningKeyID]
	require.True(t, ok, "key %s is listed", v.SigningKeyID)
	require.Equal(t, k.PublicKeyBase64, *v.SigningPublicKey)
	r := receiptOf(t, h, v)
	_, raw, err := receipt.Hash(r)
	require.NoError(t, err)
	pub, err := sign.ParsePublicKey(k.PublicKeyBase64)
	require.NoError(t, err)
	sig, err := sign.ParseSignature(r.Signature)
	require.NoError(t, err)
	require.True(t, ed25519.Verify(pub, raw[:], sig), "version %s verifies with %s", v.PassportVersionID, v.SigningKeyID)
}

// SPEC §16, per-tenant keys over HTTP with real jobs: the first compile
// creates the tenant's key; a rotation makes new passports name the new key
// while the old ones still verify; a revocation leaves the tenant without
// an active key until the next compile; another tenant can neither see nor
// touch the keys; no private key is ever answered or logged.
func TestTenantSigningKeys(t *testing.T) {
	t.Parallel()
	env := pipelineEnv(t)
	h := newHarness(t, service.RoleAll, env)
	var seen bodies

	pp := h.compiledSample()
	v1 := h.signedWithQR(pp.PassportID)
	require.Equal(t, "dev-k1", v1.SigningKeyID, "the tenant's first key, created on first need")
	status, raw := seen.as(h, testToken, http.MethodGet, "/v1/signing-keys?tenant_id="+devTenant, nil)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	keys := signingKeysOf(t, raw)
	require.Equal(t, bpctype.KeyActive, keys["dev-k1"].Status)
	require.Equal(t, devTenant, keys["dev-k1"].TenantID.String())
	require.Contains(t, keys, env["BPC_SIGNING_KEY_ID"], "the legacy key is listed")
	require.Nil(t, keys[env["BPC_SIGNING_KEY_ID"]].TenantID)
	requireVerifies(t, h, v1, keys)

	// The platform without tenant_id: the legacy keys only.
	status, raw = seen.as(h, testToken, http.MethodGet, "/v1/signing-keys", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{env["BPC_SIGNING_KEY_ID"]}, keyIDs(signingKeysOf(t, raw)))

	// Roles: a writer key may list but not rotate.
	writer := h.createKey(devTenant, "writer", nil)
	status, raw = seen.as(h, writer.Token, http.MethodGet, "/v1/signing-keys", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, signingKeysOf(t, raw), "dev-k1")
	status, raw = seen.as(h, writer.Token, http.MethodPost, "/v1/signing-keys:rotate", map[string]any{})
	require.Equal(t, http.StatusForbidden, status, "%s", raw)

	// Rotation by the tenant's admin.
	admin := h.createKey(devTenant, "admin", nil)
	status, raw = seen.as(h, admin.Token, http.MethodPost, "/v1/signing-keys:rotate", map[string]any{})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	var rotated bpctype.SigningKey
	require.NoError(t, json.Unmarshal(raw, &rotated))
	require.Equal(t, "dev-k2", rotated.KeyID)
	require.Equal(t, bpctype.KeyActive, rotated.Status)

	sn := h.snapshotOf(h.sampleFacts(), true)
	rules := h.rulesVersion(nmc811.Rules(), nmc811.Tests(), true)
	h.succeeded(h.compile(pp.PassportID, sn.SnapshotID, rules.RulePackageVersionID))
	v2 := h.signedWithQR(pp.PassportID)
	require.NotEqual(t, v1.PassportVersionID, v2.PassportVersionID)
	require.Equal(t, "dev-k2", v2.SigningKeyID, "new passports name the new key")
	status, raw = seen.as(h, admin.Token, http.MethodGet, "/v1/signing-keys", nil)
	require.Equal(t, http.StatusOK, status)
	keys = signingKeysOf(t, raw)
	require.Equal(t, bpctype.KeyRetired, keys["dev-k1"].Status)
	require.NotNil(t, keys["dev-k1"].RetiredAt)
	requireVerifies(t, h, v1, keys)
	requireVerifies(t, h, v2, keys)

	t.Run("another tenant can neither see nor touch the keys", func(t *testing.T) {
		other := h.newTenant()
		otherAdmin := h.createKey(other, "admin", nil)
		status, raw := seen.as(h, otherAdmin.Token, http.MethodGet, "/v1/signing-keys", nil)
		require.Equal(t, http.StatusOK, status)
		for id, k := range signingKeysOf(t, raw) {
			require.False(t, strings.HasPrefix(id, "dev-k"), id)
			require.True(t, k.TenantID == nil || k.TenantID.String() == other, id)
		}
		status, raw = seen.as(h, otherAdmin.Token, http.MethodPost, "/v1/signing-keys/dev-k2/revoke", map[string]any{"reason": "hostile"})
		require.Equal(t, http.StatusNotFound, status, "%s", raw)
		require.Equal(t, "NOT_FOUND", errorCode(t, raw))
		status, unknown := seen.as(h, otherAdmin.Token, http.MethodPost, "/v1/signing-keys/dev-k99/revoke", map[string]any{"reason": "hostile"})
		require.Equal(t, http.StatusNotFound, status)
		var a, b errorEnvelope
		require.NoError(t, json.Unmarshal(raw, &a))
		require.NoError(t, json.Unmarshal(unknown, &b))
		require.Equal(t, strings.ReplaceAll(b.Error.Message, "dev-k99", "dev-k2"), a.Error.Message, "the same answer as for a key nobody has")
		status, raw = seen.as(h, otherAdmin.Token, http.MethodPost, "/v1/signing-keys:rotate", map[string]any{"tenant_id": devTenant})
		require.Equal(t, http.StatusForbidden, status, "%s", raw)
		status, raw = seen.as(h, otherAdmin.Token, http.MethodGet, "/v1/signing-keys?tenant_id="+devTenant, nil)
		require.Equal(t, http.StatusForbidden, status, "%s", raw)
		// The platform naming the wrong tenant: not found either.
		status, raw = seen.as(h, testToken, http.MethodPost, "/v1/signing-keys/dev-k2/revoke", map[string]any{"tenant_id": other, "reason": "x"})
		require.Equal(t, http.StatusNotFound, status, "%s", raw)
		// The legacy key is not a tenant's to revoke.
		status, raw = seen.as(h, testToken, http.MethodPost, "/v1/signing-keys/"+env["BPC_SIGNING_KEY_ID"]+"/revoke", map[string]any{"reason": "x"})
		require.Equal(t, http.StatusNotFound, status, "%s", raw)
		// A huge id is refused before any lookup.
		status, raw = seen.as(h, admin.Token, http.MethodPost, "/v1/signing-keys/"+strings.Repeat("k", 5000)+"/revoke", map[string]any{"reason": "x"})
		require.Equal(t, http.StatusUnprocessableEntity, status, "%s", raw)
		status, raw = seen.as(h, testToken, http.MethodGet, "/v1/signing-keys?tenant_id="+devTenant, nil)
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, bpctype.KeyActive, signingKeysOf(t, raw)["dev-k2"].Status, "nothing was revoked")
	})

	t.Run("invalid revocations", func(t *testing.T) {
		for name, body := range map[string]map[string]any{
			"future compromised_at": {"reason": "x", "compromised_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
			"no reason":             {},
			"empty reason":          {"reason": ""},
			"long reason":           {"reason": strings.Repeat("r", 501)},
			"not a time":            {"reason": "x", "compromised_at": "yesterday"},
		} {
			status, raw := seen.as(h, admin.Token, http.MethodPost, "/v1/signing-keys/dev-k2/revoke", body)
			require.Equal(t, http.StatusUnprocessableEntity, status, "%s: %s", name, raw)
			require.Equal(t, "VALIDATION_ERROR", errorCode(t, raw), name)
		}
		status, raw := seen.as(h, admin.Token, http.MethodPost, "/v1/signing-keys/dev-k2/revoke",
			map[string]any{"reason": "x", "compromised_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		require.Equal(t, http.StatusUnprocessableEntity, status)
		require.Contains(t, string(raw), "compromised_at")
	})

	// Revoking the active key: the tenant has none until the next compile.
	compromised := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	status, raw = seen.as(h, admin.Token, http.MethodPost, "/v1/signing-keys/dev-k2/revoke",
		map[string]any{"reason": "the HSM export leaked", "compromised_at": compromised.Format(time.RFC3339)})
	require.Equal(t, http.StatusOK, status, "%s", raw)
	var revoked bpctype.SigningKey
	require.NoError(t, json.Unmarshal(raw, &revoked))
	require.Equal(t, bpctype.KeyRevoked, revoked.Status)
	require.True(t, revoked.CompromisedAt.Equal(compromised))
	require.Equal(t, "the HSM export leaked", *revoked.RevocationReason)

	h.succeeded(h.compile(pp.PassportID, sn.SnapshotID, rules.RulePackageVersionID))
	v3 := h.signedWithQR(pp.PassportID)
	require.Equal(t, "dev-k3", v3.SigningKeyID, "a fresh key after the revocation")
	status, raw = seen.as(h, admin.Token, http.MethodGet, "/v1/signing-keys", nil)
	require.Equal(t, http.StatusOK, status)
	keys = signingKeysOf(t, raw)
	requireVerifies(t, h, v3, keys)

	// The audit trail on the tenant's event chain.
	for typ, n := range map[string]int{passport.EventSigningKeyCreated: 2, passport.EventSigningKeyRotated: 1, passport.EventSigningKeyRevoked: 1} {
		var got int
		require.NoError(t, h.pool.QueryRow(t.Context(), `SELECT count(*) FROM events WHERE tenant_id = $1 AND event_type = $2`,
			store.DevTenantID, typ).Scan(&got))
		require.Equal(t, n, got, typ)
	}

	// No private material in any answer or log line: the tenants' keys
	// (decrypted here with the test key encryption key, which the service
	// under BPC_ENV=test uses), their ciphertexts and the legacy seed.
	ring, err := passport.NewKeyring(passport.TestKeyEncryptionKey(), nil)
	require.NoError(t, err)
	var secrets []string
	for _, id := range []string{"dev-k1", "dev-k2", "dev-k3"} {
		row, err := store.New(h.pool).GetSigningKey(t.Context(), id)
		require.NoError(t, err)
		priv, err := ring.Open(store.DevTenantID, id, row.PrivateKeyEncrypted)
		require.NoError(t, err)
		for _, b := range [][]byte{priv.Seed(), priv, row.PrivateKeyEncrypted} {
			secrets = append(secrets, base64.StdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b), hex.EncodeToString(b))
		}
	}
	secrets = append(secrets, env["BPC_SIGNING_ED25519_PRIVATE_KEY_BASE64"], base64.StdEncoding.EncodeToString(passport.TestKeyEncryptionKey()))
	logs := h.logs.String()
	require.NotEmpty(t, logs)
	for _, s := range secrets {
		require.NotContains(t, logs, s, "a log line holds private key material")
		for _, b := range seen {
			require.NotContains(t, b, s, "an answer holds private key material")
		}
	}
	for _, b := range seen {
		require.NotContains(t, b, "private_key")
	}
}

func keyIDs(keys map[string]bpctype.SigningKey) []string {
	var ids []string
	for id := range keys {
		ids = append(ids, id)
	}
	return ids
}
