package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/internal/demo"
	"github.com/bpc-platform/bpc/internal/pdftest"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/store"
)

// The demo runs as `bpc demo` does (flags and environment through run)
// against a real `bpc serve` in a process of its own, as `make demo` runs it
// against a dev service.

// demoStages are the stage lines of a run, in order.
var demoStages = []string{"service ready", "issuer", "tenant key", "upload BOM", "upload PCF", "upload DUE_DILIGENCE", "snapshot create+items",
	"snapshot build", "snapshot seal", "rule package", "rule tests", "rule publish", "battery product", "passport",
	"compile", "sign + QR", "activate", "export JSON", "export PDF", "replay", "artifacts", "public verification", "revoke key", "verify offline"}

// demoFiles are the files a run leaves in its output directory.
var demoFiles = []string{verify.FileQRPayload, verify.FileQRPNG, verify.FilePayload, verify.FileProof, verify.FileReceipt,
	verify.FileSigningKey, verify.FilePublicKeyPEM, verify.FileReceiptHash, verify.FileSignature, demo.FileExport, demo.FileExportPDF}

// runDemo runs `bpc demo` with args against base and returns its output.
func runDemo(t *testing.T, base, token string, args ...string) (stdout string, err error) {
	t.Helper()
	var out, stderr bytes.Buffer
	env := map[string]string{"BPC_ADMIN_TOKEN": token, "BPC_URL": base}
	err = run(context.Background(), append([]string{"demo"}, args...), func(k string) string { return env[k] }, &out, &stderr)
	t.Logf("bpc demo %s:\n%s%s", strings.Join(args, " "), out.String(), stderr.String())
	return out.String(), err
}

// stageLine matches a stage line: name, duration, result.
var stageLine = regexp.MustCompile(`^  (\S.*?) +(\d+) ms  (.*)$`)

// stageResults maps each stage line of a run's output to its result.
func stageResults(stdout string) (names []string, results map[string]string) {
	results = map[string]string{}
	for _, line := range strings.Split(stdout, "\n") {
		if m := stageLine.FindStringSubmatch(line); m != nil && m[1] != "total" {
			names = append(names, m[1])
			results[m[1]] = m[3]
		}
	}
	return names, results
}

// The walk-through against the real service: every stage, the files, and
// the files being what the service serves and what a third party verifies.
func TestDemoAgainstTheService(t *testing.T) {
	t.Parallel()
	svc := startService(t, service.RoleAll, map[string]string{
		// As make demo runs it: a dev service; the dev tenant's first
		// compile creates its key (dev-k1), encrypted under the key
		// encryption key the service keeps in .bpc-dev/ of its directory.
		"BPC_ENV": "dev",
	})
	out := filepath.Join(t.TempDir(), "demo-out")
	stdout, err := runDemo(t, svc.base, testToken, "--out", out)
	require.NoError(t, err)

	names, results := stageResults(stdout)
	require.Equal(t, demoStages, names)
	require.NotContains(t, stdout, "FAIL")
	require.NotContains(t, stdout, testToken)
	require.Contains(t, stdout, "BPC demo: NMC811 sample ("+nmc811.BatterySKU+") via "+svc.base+", tenant "+devTenant+", artifacts in "+out+"/")
	require.Regexp(t, `^document \S+ version \S+ VALIDATED, \d+ facts \(PARSE_FACTS SUCCEEDED\)$`, results["upload BOM"])
	require.Regexp(t, `^(\d+)/(\d+) cases passed \(\w+\), version VALIDATED$`, results["rule tests"])
	require.Equal(t, "created (sku "+nmc811.BatterySKU+")", strings.SplitN(results["battery product"], " ", 2)[1])
	require.Regexp(t, `^SIGNED by key dev-k1, receipt_hash [0-9a-f]{64}$`, results["sign + QR"])
	require.Equal(t, "recompiled from the sealed snapshot: byte-identical (match: true)", results["replay"])
	require.Equal(t, "10 checks", results["verify offline"])
	for _, check := range []string{verify.CheckQRPayload, verify.CheckReceipt, verify.CheckProof, verify.CheckVersion,
		verify.CheckPayloadHash, verify.CheckProofRoot, verify.CheckReceiptHash, verify.CheckSigningKey, verify.CheckSignature, verify.CheckQRPNG} {
		require.Contains(t, stdout, "\n  ok   "+check+" ")
	}
	openssl := "openssl pkeyutl -verify -pubin -inkey " + filepath.Join(out, verify.FilePublicKeyPEM) + " -rawin -in " +
		filepath.Join(out, verify.FileReceiptHash) + " -sigfile " + filepath.Join(out, verify.FileSignature)
	require.Contains(t, stdout, "\n  "+openssl+"\n")
	versionID := regexp.MustCompile(`passport version (\S+) ACTIVE and verified`).FindStringSubmatch(stdout)
	require.NotNil(t, versionID, "the total line names the version")

	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	var written []string
	for _, e := range entries {
		written = append(written, e.Name())
	}
	require.ElementsMatch(t, demoFiles, written)

	// The files are the bytes the service serves.
	file := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(out, name))
		require.NoError(t, err)
		return b
	}
	for name, artifact := range map[string]string{verify.FilePayload: "payload", verify.FileProof: "proof",
		verify.FileReceipt: "receipt", verify.FileQRPNG: "qr.png"} {
		status, _, served := svc.do(http.MethodGet, "/v1/passport-versions/"+versionID[1]+"/"+artifact+"?tenant_id="+devTenant,
			nil, map[string]string{"Authorization": "Bearer " + testToken})
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, served, file(name), name)
	}
	var export struct {
		ExportFormat      string          `json:"export_format"`
		PassportVersionID string          `json:"passport_version_id"`
		Payload           json.RawMessage `json:"payload"`
		Proof             json.RawMessage `json:"proof"`
		Receipt           json.RawMessage `json:"receipt"`
		QRPayload         string          `json:"qr_payload"`
	}
	require.NoError(t, json.Unmarshal(file(demo.FileExport), &export))
	require.Equal(t, "BPC-EXPORT-1", export.ExportFormat)
	require.Equal(t, versionID[1], export.PassportVersionID)
	require.Equal(t, file(verify.FilePayload), []byte(export.Payload))
	require.Equal(t, file(verify.FileProof), []byte(export.Proof))
	require.Equal(t, file(verify.FileReceipt), []byte(export.Receipt))
	require.Equal(t, string(file(verify.FileQRPayload)), export.QRPayload)

	// The PDF is the one the service serves, and what poppler reads of it
	// names the version with its hashes, key and signature whole; its QR
	// image decodes to the QR payload.
	status, hdr, served := svc.do(http.MethodGet, "/v1/passport-versions/"+versionID[1]+"/export-file?format=PDF&tenant_id="+devTenant,
		nil, map[string]string{"Authorization": "Bearer " + testToken})
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "application/pdf", hdr.Get("Content-Type"))
	require.Equal(t, served, file(demo.FileExportPDF))
	require.Regexp(t, `^export \S+, \d+ bytes, sha256 [0-9a-f]{64} → passport\.pdf$`, results["export PDF"])
	var receipt struct {
		PayloadHash   string `json:"payload_hash"`
		ProofRootHash string `json:"proof_root_hash"`
		ReceiptHash   string `json:"receipt_hash"`
		SigningKeyID  string `json:"signing_key_id"`
		Signature     string `json:"signature"`
	}
	require.NoError(t, json.Unmarshal(file(verify.FileReceipt), &receipt))
	words := pdftest.Words(t, filepath.Join(out, demo.FileExportPDF))
	for _, whole := range []string{versionID[1], receipt.PayloadHash, receipt.ProofRootHash, hex.EncodeToString(file(verify.FileReceiptHash)),
		receipt.SigningKeyID, receipt.Signature, nmc811.BatterySKU} {
		require.True(t, words[whole], "pdftotext finds %s whole", whole)
	}
	require.Equal(t, []string{string(file(verify.FileQRPayload))}, pdftest.ImageQR(t, filepath.Join(out, demo.FileExportPDF)))

	// A third party holding the directory and the key the service lists
	// verifies it on its own.
	var keys struct {
		Items []struct {
			KeyID           string `json:"key_id"`
			PublicKeyBase64 string `json:"public_key_base64"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusOK, svc.admin(http.MethodGet, "/v1/signing-keys?tenant_id="+devTenant, nil, &keys))
	require.Len(t, keys.Items, 1, "the dev tenant's key; no legacy key is generated any more")
	// The dev service generated its key encryption key and keeps it beside
	// where it runs, readable by its user only.
	fi, err := os.Stat(filepath.Join(svc.dir, service.DevKeyEncryptionKeyFile))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	pub, err := base64.StdEncoding.DecodeString(keys.Items[0].PublicKeyBase64)
	require.NoError(t, err)
	require.Equal(t, verify.KeyDocument("dev-k1", pub), file(verify.FileSigningKey))
	a, err := verify.ReadDir(os.DirFS(out))
	require.NoError(t, err)
	_, err = verify.Verify(a, verify.Expect{PassportVersionID: versionID[1], PublicKey: ed25519.PublicKey(pub)})
	require.NoError(t, err)

	// And with openssl alone, by the command the demo prints.
	if _, err := exec.LookPath("openssl"); err == nil {
		args := strings.Fields(openssl)
		res, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err == nil || !bytes.Contains(res, []byte("rawin")) { // openssl 1.x has no -rawin
			require.NoError(t, err, "%s", res)
			require.Contains(t, string(res), "Signature Verified Successfully")
		}
	}

	// And with `bpc verify`, as a third party runs it.
	checkBpcVerify(t, out)

	// The pipeline ran with a tenant writer key, revoked at the end: every
	// request after the key's creation acted for it, not the platform.
	require.Regexp(t, `^writer key [a-z2-7]{16} \(the pipeline runs with it\)$`, results["tenant key"])
	require.Equal(t, "writer key revoked", results["revoke key"])
	require.Equal(t, "VERIFIED without credentials (ACTIVE)", results["public verification"])
	require.Equal(t, "Voltaris Battery Systems GmbH (DE), identity verified by the platform (BPC_ENV=dev)", results["issuer"])
	require.Equal(t, "ready (dev)", results["service ready"], "readiness told the platform token the environment")
	logBytes, err := os.ReadFile(svc.stdout)
	require.NoError(t, err)
	logs := string(logBytes)
	require.Contains(t, logs, `"route":"/v1/passports/{id}/compile","status":202`)
	require.Regexp(t, `"route":"/v1/passports/\{id\}/compile","status":202,[^\n]*"principal":"api_key:[0-9a-f-]{36} tenant:`+devTenant+` role:writer"`, logs)
	require.NotRegexp(t, `bpc_[a-z2-7]{16}_`, logs, "no token in the log")

	// Whoever scans the QR code: the printed public page, in a browser.
	publicURL := regexp.MustCompile(`(?m)^  (http://\S+/public/v1/passport-versions/\S+)$`).FindStringSubmatch(stdout)
	require.NotNil(t, publicURL, "the demo prints the public URL")
	require.Equal(t, svc.base+"/public/v1/passport-versions/"+versionID[1], publicURL[1])
	checkPublicPage(t, svc.base, publicURL[1], string(file(verify.FileQRPayload)))

	t.Run("again", func(t *testing.T) {
		t.Parallel()
		stdout, err := runDemo(t, svc.base, testToken, "--out", filepath.Join(t.TempDir(), "demo-out"))
		require.NoError(t, err)
		names, results := stageResults(stdout)
		require.Equal(t, demoStages, names)
		require.Equal(t, "reused (sku "+nmc811.BatterySKU+")", strings.SplitN(results["battery product"], " ", 2)[1])
		require.NotContains(t, stdout, versionID[1]+" ACTIVE and verified", "a new passport version")
	})

	t.Run("another tenant", func(t *testing.T) {
		t.Parallel()
		var tenant struct {
			TenantID string `json:"tenant_id"`
		}
		require.Equal(t, http.StatusCreated, svc.admin(http.MethodPost, "/v1/tenants", map[string]any{"slug": "demo-other", "name": "Other"}, &tenant))
		stdout, err := runDemo(t, svc.base, testToken, "--out", filepath.Join(t.TempDir(), "demo-out"), "--tenant", strings.ToUpper(tenant.TenantID))
		require.NoError(t, err)
		require.Contains(t, stdout, ", tenant "+tenant.TenantID+", ")
		_, results := stageResults(stdout)
		require.Contains(t, results["battery product"], "created")
	})

	t.Run("wrong token", func(t *testing.T) {
		t.Parallel()
		stdout, err := runDemo(t, svc.base, "not-the-admin-token", "--out", filepath.Join(t.TempDir(), "demo-out"))
		// Readiness authenticates the token it is sent (SPEC §15): the
		// first stage already tells the token is wrong, not that the
		// service is down.
		require.ErrorContains(t, err, `stage "service ready": GET /v1/health/ready: HTTP 401 UNAUTHORIZED`)
		require.ErrorContains(t, err, "(is BPC_ADMIN_TOKEN the service's admin token?)")
		require.NotContains(t, err.Error(), "not running")
		require.NotContains(t, err.Error(), "make run")
		require.NotContains(t, err.Error(), "not-the-admin-token")
		names, results := stageResults(stdout)
		require.Equal(t, []string{"service ready"}, names)
		require.Equal(t, "FAILED", results["service ready"])
	})

	// Artifacts changed on their way from the service are caught: the demo
	// trusts its verification, not the transport.
	t.Run("payload changed in transit", func(t *testing.T) {
		t.Parallel()
		proxy := tamperingProxy(t, svc.base, "/payload", func(b []byte) []byte {
			return bytes.Replace(b, []byte(nmc811.BatterySKU), []byte("EVB-NMC811-76"), 1)
		})
		out := filepath.Join(t.TempDir(), "demo-out")
		stdout, err := runDemo(t, proxy, testToken, "--out", out)
		require.ErrorContains(t, err, `stage "verify offline": verification failed: ph = sha256(payload): `)
		require.ErrorContains(t, err, "but the QR payload says")
		require.Contains(t, stdout, "\n  FAIL ph = sha256(payload) ")
		require.Contains(t, stdout, "\n  ok   signature ")
		require.NotContains(t, stdout, "ACTIVE and verified")
		_, results := stageResults(stdout)
		require.Equal(t, "FAILED", results["verify offline"])
	})

	t.Run("export changed in transit", func(t *testing.T) {
		t.Parallel()
		proxy := tamperingProxy(t, svc.base, "/export-file", func(b []byte) []byte {
			return bytes.Replace(b, []byte(nmc811.BatterySKU), []byte("EVB-NMC811-76"), 1)
		})
		stdout, err := runDemo(t, proxy, testToken, "--out", filepath.Join(t.TempDir(), "demo-out"))
		require.ErrorContains(t, err, `stage "export JSON": export file has SHA-256 `)
		require.ErrorContains(t, err, ", the export record says ")
		_, results := stageResults(stdout)
		require.Equal(t, "FAILED", results["export JSON"])
	})

	t.Run("signing key list changed in transit", func(t *testing.T) {
		t.Parallel()
		other, _, err := ed25519.GenerateKey(nil)
		require.NoError(t, err)
		proxy := tamperingProxy(t, svc.base, "/v1/signing-keys", func(b []byte) []byte {
			return []byte(strings.Replace(string(b), keys.Items[0].PublicKeyBase64, base64.StdEncoding.EncodeToString(other), 1))
		})
		_, err = runDemo(t, proxy, testToken, "--out", filepath.Join(t.TempDir(), "demo-out"))
		require.ErrorContains(t, err, `stage "artifacts": key dev-k1: /v1/signing-keys lists another public key than the version carries`)
	})
}

// tamperingProxy forwards to the service at base and passes the body of
// every response whose path ends in suffix through edit.
func tamperingProxy(t *testing.T, base, suffix string, edit func([]byte) []byte) string {
	t.Helper()
	target, err := url.Parse(base)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if !strings.HasSuffix(resp.Request.URL.Path, suffix) {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		b = edit(b)
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A job that fails on the real service stops the demo at its stage, with the
// job's last_error: a service whose key encryption key does not open the
// tenant's signing key fails SIGN_PASSPORT.
func TestDemoStopsAtAFailedJob(t *testing.T) {
	t.Parallel()
	svc := startService(t, service.RoleAll, nil)
	pool, err := pgxpool.New(t.Context(), svc.env["DATABASE_URL"])
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	storeKeyUnderAnotherKEK(t, store.New(pool))
	stdout, err := runDemo(t, svc.base, testToken, "--out", filepath.Join(t.TempDir(), "demo-out"))
	require.Error(t, err)
	require.Regexp(t, `^stage "sign \+ QR": job \S+ \(SIGN_PASSPORT\) ended FAILED after 1 attempt\(s\): last_error SIGNING_KEY_MISSING: `, err.Error())
	names, results := stageResults(stdout)
	require.Equal(t, demoStages[:slices.Index(demoStages, "sign + QR")+1], names)
	require.Equal(t, "FAILED", results["sign + QR"])
	require.Contains(t, results["compile"], "COMPILE_PASSPORT SUCCEEDED")
	svc.requireAlive()
}

func TestDemoCommandConfiguration(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	var stdout, stderr bytes.Buffer
	ctx := context.Background()
	err := run(ctx, []string{"demo"}, env(nil), &stdout, &stderr)
	require.ErrorContains(t, err, "BPC_ADMIN_TOKEN is required")
	err = run(ctx, []string{"demo", "--url", "ftp://x"}, env(map[string]string{"BPC_ADMIN_TOKEN": "t"}), &stdout, &stderr)
	require.ErrorContains(t, err, "must be an http(s) URL")
	err = run(ctx, []string{"demo"}, env(map[string]string{"BPC_ADMIN_TOKEN": "t", "BPC_DEMO_TENANT": "nope"}), &stdout, &stderr)
	require.ErrorContains(t, err, "BPC_DEMO_TENANT must be a UUID")
	err = run(ctx, []string{"demo", "extra"}, env(map[string]string{"BPC_ADMIN_TOKEN": "t"}), &stdout, &stderr)
	require.ErrorContains(t, err, "unexpected argument")
	err = run(ctx, []string{"demo"}, env(map[string]string{"BPC_ADMIN_TOKEN": "t", "BPC_DEMO_OUT": " "}), &stdout, &stderr)
	require.ErrorContains(t, err, "BPC_DEMO_OUT must not be empty")

	// A service that is not there: the first stage says so.
	out := filepath.Join(t.TempDir(), "out")
	err = run(ctx, []string{"demo", "--url", "http://127.0.0.1:1", "--out", out}, env(map[string]string{"BPC_ADMIN_TOKEN": "t"}), &stdout, &stderr)
	require.ErrorContains(t, err, `stage "service ready": the service is not ready at http://127.0.0.1:1`)
}
