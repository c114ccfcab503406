package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/fixture"
	"github.com/bpc-platform/bpc/internal/http/public"
	"github.com/bpc-platform/bpc/internal/teststore"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// verifyKeys runs `bpc verify --keys keys export` and returns its output
// and exit status.
func verifyKeys(t *testing.T, keys, export string) (string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := Run(context.Background(), []string{"verify", "--keys", keys, export}, func(string) string { return "" }, &stdout, &stderr)
	out := stdout.String() + stderr.String()
	if err == nil {
		return out, 0
	}
	return out, ExitCode(err)
}

// TestVerifyPinnedToAKeyDirectory exports a version signed by its
// tenant's own key and checks it against saved directories: its own
// (verified issuer: green, 0; unverified: amber, 3), another tenant's
// (red, 1) and its own after the key's revocation (red, 1, KEY_REVOKED).
func TestVerifyPinnedToAKeyDirectory(t *testing.T) {
	t.Parallel()
	e := teststore.New(t)
	tenant := store.DevTenantID
	active := fixture.ActiveNMC811(t, e.Store, e.River, tenant, "Pack")
	_, err := e.Pool.Exec(e.Ctx, `UPDATE signing_keys SET tenant_id = $1, private_key_encrypted = '\x00' WHERE key_id = 'fixture-key'`, tenant)
	require.NoError(t, err)
	dir := t.TempDir()

	art, err := e.Store.LoadPassportArtifacts(e.Ctx, tenant, active.Version.PassportVersionID)
	require.NoError(t, err)
	doc, err := passport.ExportDocument(active.Version, art)
	require.NoError(t, err)
	export := filepath.Join(dir, "export.json")
	require.NoError(t, os.WriteFile(export, doc, 0o600))

	save := func(name string, tenantID uuid.UUID) string {
		t.Helper()
		d, err := public.Directory(e.Ctx, e.Store, tenantID)
		require.NoError(t, err)
		b, err := json.Marshal(d)
		require.NoError(t, err)
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, b, 0o600))
		return path
	}

	fixture.Issuer(t, e.Store, e.River, tenant, "Voltaris Battery Systems GmbH", false)
	out, code := verifyKeys(t, save("unverified.json", tenant), export)
	require.Equal(t, 3, code, out)
	require.Contains(t, out, "SIGNED — ISSUER NOT VERIFIED (amber)")
	require.Contains(t, out, "Issuer: Voltaris Battery Systems GmbH, DE, ")
	require.Contains(t, out, "identity NOT verified")

	fixture.Issuer(t, e.Store, e.River, tenant, "Voltaris Battery Systems GmbH", true)
	good := save("good.json", tenant)
	out, code = verifyKeys(t, good, export)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "VERIFIED (green): 12 checks passed")
	require.Contains(t, out, "ok   key owner")

	// Another tenant's directory, even one that lists a key of the same id.
	other, err := e.Store.CreateTenant(e.Ctx, "other", "Other tenant")
	require.NoError(t, err)
	fixture.Issuer(t, e.Store, e.River, other.TenantID, "Voltaris Battery Systems GmbH", true)
	foreign := save("foreign.json", other.TenantID)
	b, _ := os.ReadFile(good)
	require.NoError(t, os.WriteFile(foreign+".copy", bytes.Replace(b, []byte(tenant.String()), []byte(other.TenantID.String()), 1), 0o600))
	for _, f := range []string{foreign, foreign + ".copy"} {
		out, code = verifyKeys(t, f, export)
		require.Equal(t, 1, code, out)
		require.Contains(t, out, "FAIL key owner")
		require.Contains(t, out, "NOT VERIFIED (red)")
		require.Contains(t, out, "KEY_NOT_OWNED")
	}

	// A directory whose key is another key under the same id: the
	// signature does not verify with the pinned key.
	forged := bytes.Replace(b, []byte(active.Signer.PublicKeyBase64()), []byte(fixture.SignerFor(t, e.Store, "other-key").PublicKeyBase64()), 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "forged.json"), forged, 0o600))
	out, code = verifyKeys(t, filepath.Join(dir, "forged.json"), export)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "FAIL signing key")

	// Revoked, compromised before the receipt's issued_at.
	_, err = e.Pool.Exec(e.Ctx, `UPDATE signing_keys SET status = 'revoked', revoked_at = now(), compromised_at = $1,
		revocation_reason = 'leaked' WHERE key_id = 'fixture-key'`, time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	out, code = verifyKeys(t, save("revoked.json", tenant), export)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "FAIL key validity")
	require.Contains(t, out, "KEY_REVOKED")
	// Compromised after it: offline, the receipt's issued_at is only the
	// signer's claim (a thief of the key writes an early one), so a revoked
	// key fails all the same; online, the service's record decides.
	_, err = e.Pool.Exec(e.Ctx, `UPDATE signing_keys SET compromised_at = $1 WHERE key_id = 'fixture-key'`, time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	out, code = verifyKeys(t, save("revoked-later.json", tenant), export)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "KEY_REVOKED")
	require.Contains(t, out, "check the passport online")

	// A keys file that is not a directory: a usage error saying why.
	for name, tc := range map[string]struct{ body, says string }{
		"unknown member": {strings.Replace(string(b), `"keys":`, `"extra":1,"keys":`, 1), "unknown field"},
		"bad base64":     {strings.Replace(string(b), active.Signer.PublicKeyBase64(), "not base64!", 1), "public_key_base64"},
		"huge":           {`{"tenant_id":"` + strings.Repeat("a", 2<<20) + `"}`, "more than"},
		"not json":       {"<html>", "not a directory document"},
		"trailing":       {string(b) + "{}", "after its JSON object"},
		"no tenant":      {`{"keys":[]}`, "no tenant_id"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
		require.NoError(t, os.WriteFile(path, []byte(tc.body), 0o600))
		out, code := verifyKeys(t, path, export)
		require.Equal(t, 2, code, "%s: %s", name, out)
		require.Contains(t, out, tc.says, name)
	}
	out, code = verifyKeys(t, filepath.Join(dir, "missing.json"), export)
	require.Equal(t, 2, code, out)
}
