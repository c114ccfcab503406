package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/proof"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/examples/nmc811"
)

const (
	demoTestToken   = "demo-test-token"
	demoTestVersion = "11111111-1111-4111-8111-111111111111"
	demoTestKeyID   = "test-key-1"
)

// demoExample is a consistent, really signed set of artifacts.
type demoExample struct {
	a      demoArtifacts
	claims demoClaims
	r      receipt.Receipt
	pub    ed25519.PublicKey
}

// newDemoExample builds payload, proof, receipt and QR payload whose hashes
// all match, signed with a fresh Ed25519 key (signer; nil = a fresh one).
func newDemoExample(t *testing.T, signer ed25519.PrivateKey) *demoExample {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	if signer == nil {
		signer = priv
	}
	payload, err := canonjson.Marshal(map[string]any{
		"battery": map[string]any{"sku": nmc811.BatterySKU, "chemistry": "NMC811", "capacity_wh": 75000},
	})
	require.NoError(t, err)
	p, proofBytes, err := proof.Build([]proof.Field{
		{Path: "battery.sku", Root: &proof.Step{Type: proof.FactGet, Data: map[string]any{"fact": "bom", "value": nmc811.BatterySKU}}},
		{Path: "battery.capacity_wh", Root: &proof.Step{Type: proof.Op, Data: map[string]any{"op": "MUL"}, Children: []*proof.Step{
			{Type: proof.Const, Data: 75},
			{Type: proof.Const, Data: 1000},
		}}},
	})
	require.NoError(t, err)
	r := receipt.Receipt{
		ReceiptVersion:       receipt.Version,
		IssuedAt:             "2026-11-22T10:00:00Z",
		TenantID:             demoDefaultTenant,
		PassportVersionID:    demoTestVersion,
		PassportID:           "22222222-2222-4222-8222-222222222222",
		BatteryProductID:     "33333333-3333-4333-8333-333333333333",
		SnapshotID:           "44444444-4444-4444-8444-444444444444",
		SnapshotHash:         hash.SHA256Hex([]byte("snapshot")),
		RulePackageVersionID: "55555555-5555-4555-8555-555555555555",
		DSLSHA256:            hash.SHA256HexString(nmc811.Rules()),
		TestsSHA256:          hash.SHA256HexString(nmc811.Tests()),
		CompilerBuildID:      "bpc-test",
		PayloadHash:          hash.SHA256Hex(payload),
		ProofRootHash:        p.RootHash,
		SignatureAlg:         receipt.SignatureAlg,
		SigningKeyID:         demoTestKeyID,
	}
	rh, raw, err := receipt.Hash(r)
	require.NoError(t, err)
	r.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(signer, raw[:]))
	signed, err := receipt.SignedCanonical(r)
	require.NoError(t, err)
	qrPayload, err := qr.Payload(demoTestVersion, r.PayloadHash, p.RootHash, rh)
	require.NoError(t, err)
	png, err := qr.PNG(qrPayload)
	require.NoError(t, err)

	a := demoArtifacts{QRPayload: qrPayload, QRPNG: png, Payload: payload, Proof: proofBytes, Receipt: signed}
	require.NoError(t, completeArtifacts(&a, demoTestKeyID, pub))
	return &demoExample{
		a: a, r: r, pub: pub,
		claims: demoClaims{
			PassportVersionID: demoTestVersion, PayloadHash: r.PayloadHash, ProofRootHash: p.RootHash,
			ReceiptHash: rh, Signature: r.Signature, SigningKeyID: demoTestKeyID, PublicKey: pub,
		},
	}
}

func failedChecks(rep verifyReport) []string {
	var names []string
	for _, c := range rep.Checks {
		if !c.OK {
			names = append(names, c.Name)
		}
	}
	return names
}

func TestDemoVerifyArtifactsPasses(t *testing.T) {
	ex := newDemoExample(t, nil)
	rep, err := verifyArtifacts(ex.a, ex.claims)
	require.NoError(t, err)
	require.Empty(t, failedChecks(rep))
	names := make([]string, 0, len(rep.Checks))
	for _, c := range rep.Checks {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"qr payload", "receipt", "proof", "pv = version", "ph = sha256(payload)",
		"pr = proof root", "rh = receipt hash", "signing key", "signature", "qr.png"}, names)

	// Without API claims (a third party with only the files) it passes too.
	_, err = verifyArtifacts(ex.a, demoClaims{})
	require.NoError(t, err)
}

func TestDemoVerifyArtifactsFailsOnAFlippedByteInEachFile(t *testing.T) {
	ex := newDemoExample(t, nil)
	dir := t.TempDir()
	require.NoError(t, writeArtifacts(dir, ex.a))
	a, err := loadArtifacts(dir)
	require.NoError(t, err)
	_, err = verifyArtifacts(a, ex.claims)
	require.NoError(t, err, "the written files verify")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 9)
	for _, e := range entries {
		for _, at := range []string{"first", "middle", "last"} {
			t.Run(e.Name()+"/"+at, func(t *testing.T) {
				dir := t.TempDir()
				require.NoError(t, writeArtifacts(dir, ex.a))
				path := filepath.Join(dir, e.Name())
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				i := map[string]int{"first": 0, "middle": len(b) / 2, "last": len(b) - 1}[at]
				if e.Name() == filePublicKeyPEM && at == "last" {
					i = len(b) - 2 // the final newline is not part of the PEM block
				}
				b[i] ^= 0x01
				require.NoError(t, os.WriteFile(path, b, 0o644))
				a, err := loadArtifacts(dir)
				require.NoError(t, err)
				rep, err := verifyArtifacts(a, demoClaims{})
				require.Error(t, err, "byte %d of %s flipped", i, e.Name())
				require.NotEmpty(t, failedChecks(rep))
			})
		}
	}
}

func TestDemoVerifyArtifactsFailsOnAWrongSignature(t *testing.T) {
	_, other, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	// Everything consistent, but the receipt (and signature.bin) carry a
	// signature by another key than the one published.
	ex := newDemoExample(t, other)
	rep, err := verifyArtifacts(ex.a, demoClaims{})
	require.ErrorContains(t, err, "does NOT verify")
	require.Equal(t, []string{"signature"}, failedChecks(rep))

	// signature.bin alone replaced by a valid-looking other signature.
	ex = newDemoExample(t, nil)
	_, raw, err := receipt.Hash(ex.r)
	require.NoError(t, err)
	ex.a.Signature = ed25519.Sign(other, raw[:])
	rep, err = verifyArtifacts(ex.a, demoClaims{})
	require.Error(t, err)
	require.Equal(t, []string{"signature"}, failedChecks(rep))

	// The API claims another signature than the receipt carries.
	ex = newDemoExample(t, nil)
	claims := ex.claims
	claims.Signature = base64.StdEncoding.EncodeToString(ex.a.Signature[:63]) + "AA=="
	rep, err = verifyArtifacts(ex.a, claims)
	require.Error(t, err)
	require.Equal(t, []string{"signature"}, failedChecks(rep))
}

func TestDemoVerifyArtifactsChecksTheAPIClaims(t *testing.T) {
	ex := newDemoExample(t, nil)
	other, _, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	cases := map[string]func(c *demoClaims){
		"pv = version":         func(c *demoClaims) { c.PassportVersionID = "66666666-6666-4666-8666-666666666666" },
		"ph = sha256(payload)": func(c *demoClaims) { c.PayloadHash = hash.SHA256Hex(nil) },
		"pr = proof root":      func(c *demoClaims) { c.ProofRootHash = hash.SHA256Hex(nil) },
		"rh = receipt hash":    func(c *demoClaims) { c.ReceiptHash = hash.SHA256Hex(nil) },
		"signing key":          func(c *demoClaims) { c.PublicKey = other },
	}
	for check, mutate := range cases {
		t.Run(check, func(t *testing.T) {
			claims := ex.claims
			mutate(&claims)
			rep, err := verifyArtifacts(ex.a, claims)
			require.Error(t, err)
			require.Contains(t, failedChecks(rep), check)
		})
	}
	claims := ex.claims
	claims.SigningKeyID = "another-key"
	_, err = verifyArtifacts(ex.a, claims)
	require.ErrorContains(t, err, "another-key")
}

func TestDemoVerifyArtifactsNeverPanicsOnGarbage(t *testing.T) {
	ex := newDemoExample(t, nil)
	inputs := []demoArtifacts{
		{},
		{QRPayload: "BPC1|garbage", Receipt: []byte("{"), Proof: []byte("[]"), SigningKey: []byte(`{"key_id":"k","public_key_base64":"AAAA"}`), PublicKey: []byte("-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n")},
	}
	truncated := ex.a
	truncated.Signature = truncated.Signature[:10]
	truncated.ReceiptHash = nil
	inputs = append(inputs, truncated)
	for i, a := range inputs {
		rep, err := verifyArtifacts(a, ex.claims)
		require.Error(t, err, "input %d", i)
		require.NotEmpty(t, failedChecks(rep))
	}
	_, err := loadArtifacts(t.TempDir())
	require.Error(t, err, "an empty directory has no artifacts")
}

// The files let a third party verify the signature with openssl alone.
func TestDemoArtifactsVerifyWithOpenSSL(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	ex := newDemoExample(t, nil)
	dir := t.TempDir()
	require.NoError(t, writeArtifacts(dir, ex.a))
	verify := func() ([]byte, error) {
		return exec.Command("openssl", "pkeyutl", "-verify", "-pubin", "-inkey", filepath.Join(dir, filePublicKeyPEM),
			"-rawin", "-in", filepath.Join(dir, fileReceiptHash), "-sigfile", filepath.Join(dir, fileSignature)).CombinedOutput()
	}
	out, err := verify()
	if err != nil && bytes.Contains(out, []byte("rawin")) {
		t.Skipf("openssl without -rawin (needs 3.x): %s", out)
	}
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "Signature Verified Successfully")

	sig := bytes.Clone(ex.a.Signature)
	sig[0] ^= 1
	require.NoError(t, os.WriteFile(filepath.Join(dir, fileSignature), sig, 0o644))
	out, err = verify()
	require.Error(t, err, "%s", out)
}

// ---------------------------------------------------------------------------
// client

func testClient(url string) *demoClient {
	c := newDemoClient(url, demoTestToken, demoDefaultTenant)
	c.pollInterval = time.Millisecond
	c.jobTimeout = 2 * time.Second
	return c
}

func writeEnvelope(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": code, "message": message, "correlation_id": "corr-1", "details": map[string]any{"field": "name"},
	}})
}

func TestDemoClientErrorEnvelope(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Authorization") != "Bearer "+demoTestToken:
			writeEnvelope(w, http.StatusUnauthorized, "UNAUTHORIZED", "missing token")
		case r.URL.Path == "/v1/rule-packages":
			writeEnvelope(w, http.StatusConflict, "CONFLICT", "name already taken")
		case r.URL.Path == "/v1/proxy":
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("<html>bad gateway</html>"))
		default:
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("not json"))
		}
	}))
	defer srv.Close()
	c := testClient(srv.URL)
	ctx := context.Background()

	err := c.do(ctx, http.MethodPost, "/v1/rule-packages", map[string]any{"name": "x"}, nil)
	require.ErrorContains(t, err, "HTTP 409 CONFLICT: name already taken")
	require.ErrorContains(t, err, "corr-1")
	var ae *apiError
	require.True(t, errors.As(err, &ae))
	require.Equal(t, http.StatusConflict, ae.Status)
	require.Equal(t, "CONFLICT", ae.Code)
	require.Equal(t, "name", ae.Details["field"])
	require.True(t, isAPIError(err, http.StatusConflict))

	err = c.do(ctx, http.MethodGet, "/v1/proxy", nil, nil)
	require.ErrorContains(t, err, "HTTP 502: <html>bad gateway</html>")

	var out struct{ X int }
	err = c.do(ctx, http.MethodGet, "/v1/other", nil, &out)
	require.ErrorContains(t, err, "does not decode")

	c.token = "wrong"
	err = c.do(ctx, http.MethodGet, "/v1/other", nil, nil)
	require.ErrorContains(t, err, "UNAUTHORIZED")
	require.NotContains(t, err.Error(), "wrong", "the token never shows in errors")

	_, err = testClient("http://127.0.0.1:1").waitJob(ctx, "x", &demoJob{JobID: "j", Status: "QUEUED"})
	require.Error(t, err, "a refused connection is an error")
}

// jobServer answers GET /v1/jobs/{id} with the statuses in order, the last
// one forever.
func jobServer(t *testing.T, statuses []string, lastError string) *httptest.Server {
	var calls atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("tenant_id") != demoDefaultTenant || r.URL.Query().Get("waitMs") == "" {
			writeEnvelope(w, http.StatusBadRequest, "VALIDATION_ERROR", "tenant_id and waitMs expected")
			return
		}
		n := int(calls.Add(1)) - 1
		status := statuses[min(n, len(statuses)-1)]
		job := map[string]any{"job_id": r.PathValue("id"), "type": "COMPILE_PASSPORT", "status": status, "attempts": n + 1, "last_error": nil}
		code := http.StatusAccepted
		if jobIsTerminal(status) {
			code = http.StatusOK
			if status != jobSucceeded {
				job["last_error"] = map[string]any{"code": lastError, "message": "rule R12 needs fact pcf.total", "attempt": n + 1, "at": "2026-11-22T10:00:00Z"}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(job)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestDemoWaitJob(t *testing.T) {
	ctx := context.Background()
	start := &demoJob{JobID: "77777777-7777-4777-8777-777777777777", Type: "COMPILE_PASSPORT", Status: "QUEUED"}

	srv := jobServer(t, []string{"RUNNING", "RUNNING", jobSucceeded}, "")
	job, err := testClient(srv.URL).waitJob(ctx, "compile", start)
	require.NoError(t, err)
	require.Equal(t, jobSucceeded, job.Status)

	for _, status := range []string{jobFailed, jobDeadLetter, jobCancelled} {
		srv := jobServer(t, []string{"RUNNING", status}, "COMPILE_MISSING_FACT")
		_, err := testClient(srv.URL).waitJob(ctx, "compile", start)
		require.ErrorContains(t, err, `stage "compile"`)
		require.ErrorContains(t, err, "ended "+status)
		require.ErrorContains(t, err, "last_error COMPILE_MISSING_FACT: rule R12 needs fact pcf.total")
		var jf *jobFailedError
		require.True(t, errors.As(err, &jf))
		require.Equal(t, status, jf.Job.Status)
	}

	srv = jobServer(t, []string{"RUNNING"}, "")
	c := testClient(srv.URL)
	c.jobTimeout = 50 * time.Millisecond
	_, err = c.waitJob(ctx, "compile", start)
	require.ErrorContains(t, err, "still RUNNING after 50ms")

	_, err = c.waitJob(ctx, "compile", nil)
	require.ErrorContains(t, err, "no job")
}

// ---------------------------------------------------------------------------
// the whole run against a fake service

// fakeService implements the HTTP contract the demo relies on, with canned
// answers built from a demoExample.
type fakeService struct {
	ex *demoExample

	failJob   string // job type that ends DEAD_LETTER
	mismatch  bool   // replay answers 409 REPLAY_MISMATCH
	exportSum string // sha256 the export record claims (default: the real one)

	mu        sync.Mutex
	jobs      map[string]string // job id → type
	nextID    int
	pkgTries  int
	pvPolls   int
	uploaded  []string
	itemsSeen []string
}

func (f *fakeService) id() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	return fmt.Sprintf("aaaaaaaa-aaaa-4aaa-8aaa-%012d", f.nextID)
}

func (f *fakeService) newJob(typ string) map[string]any {
	id := f.id()
	f.mu.Lock()
	f.jobs[id] = typ
	f.mu.Unlock()
	return map[string]any{"job_id": id, "type": typ, "status": "QUEUED", "attempts": 0, "last_error": nil}
}

func (f *fakeService) exportFile() []byte {
	return []byte(`{"passport":` + string(f.ex.a.Payload) + `}`)
}

func (f *fakeService) handler() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	raw := func(b []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(b) }
	}
	jobReply := func(typ string, status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { reply(w, status, map[string]any{"job": f.newJob(typ)}) }
	}
	mux.HandleFunc("GET /v1/health/ready", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, map[string]any{"status": "ok"}) })
	mux.HandleFunc("GET /v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		typ, ok := f.jobs[r.PathValue("id")]
		f.mu.Unlock()
		if !ok {
			writeEnvelope(w, 404, "NOT_FOUND", "no such job")
			return
		}
		job := map[string]any{"job_id": r.PathValue("id"), "type": typ, "status": jobSucceeded, "attempts": 1, "last_error": nil}
		if typ == f.failJob {
			job["status"] = jobDeadLetter
			job["last_error"] = map[string]any{"code": "INTERNAL", "message": "boom", "attempt": 3, "at": "2026-11-22T10:00:00Z"}
		}
		reply(w, 200, job)
	})
	mux.HandleFunc("GET /v1/jobs", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, map[string]any{"items": []any{}}) })
	mux.HandleFunc("POST /v1/documents", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 201, map[string]any{"document_id": f.id()})
	})
	mux.HandleFunc("POST /v1/documents/{id}/versions", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			MimeType string `json:"mime_type"`
			Content  string `json:"content"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		b, err := base64.StdEncoding.DecodeString(in.Content)
		if err != nil || !json.Valid(b) || in.MimeType != "application/json" {
			writeEnvelope(w, 400, "VALIDATION_ERROR", "content must be base64 JSON")
			return
		}
		id := f.id()
		f.mu.Lock()
		f.uploaded = append(f.uploaded, id)
		f.mu.Unlock()
		reply(w, 201, map[string]any{"document_version": map[string]any{"document_version_id": id, "status": "UPLOADED"}, "job": f.newJob("PARSE_FACTS")})
	})
	mux.HandleFunc("GET /v1/document-versions/{id}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"document_version_id": r.PathValue("id"), "status": "VALIDATED", "fact_count": 7, "error": nil})
	})
	mux.HandleFunc("POST /v1/snapshots", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 201, map[string]any{"snapshot_id": f.ex.r.SnapshotID, "status": "BUILDING"})
	})
	mux.HandleFunc("POST /v1/snapshots/{id}/items", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			IDs []string `json:"document_version_ids"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		f.mu.Lock()
		f.itemsSeen = in.IDs
		f.mu.Unlock()
		reply(w, 200, map[string]any{"snapshot": map[string]any{"item_count": 21}, "added": 21})
	})
	mux.HandleFunc("POST /v1/snapshots/{id}/build", jobReply("BUILD_SNAPSHOT", 202))
	mux.HandleFunc("POST /v1/snapshots/{id}/seal", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"snapshot_id": r.PathValue("id"), "status": "SEALED", "snapshot_hash": f.ex.r.SnapshotHash})
	})
	mux.HandleFunc("POST /v1/rule-packages", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.pkgTries++
		first := f.pkgTries == 1
		f.mu.Unlock()
		if first {
			writeEnvelope(w, 409, "CONFLICT", "name taken")
			return
		}
		reply(w, 201, map[string]any{"rule_package_id": f.id()})
	})
	mux.HandleFunc("POST /v1/rule-packages/{id}/versions", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			DSL   string `json:"dsl_source"`
			Tests string `json:"tests_source"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		if in.DSL != nmc811.Rules() || in.Tests != nmc811.Tests() {
			writeEnvelope(w, 400, "VALIDATION_ERROR", "sources")
			return
		}
		reply(w, 201, map[string]any{"rule_package_version_id": f.ex.r.RulePackageVersionID, "status": "DRAFT"})
	})
	mux.HandleFunc("POST /v1/rule-package-versions/{id}/test", jobReply("RUN_RULE_TESTS", 202))
	mux.HandleFunc("GET /v1/rule-package-versions/{id}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"rule_package_version_id": r.PathValue("id"), "status": "VALIDATED"})
	})
	mux.HandleFunc("GET /v1/rule-package-versions/{id}/test-runs", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"items": []any{map[string]any{"status": "PASSED", "total_cases": 12, "passed": 12, "failed": 0, "first_failure": nil}}})
	})
	mux.HandleFunc("POST /v1/rule-package-versions/{id}/publish", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"status": "PUBLISHED"})
	})
	mux.HandleFunc("POST /v1/battery-products", func(w http.ResponseWriter, r *http.Request) {
		writeEnvelope(w, 409, "CONFLICT", "sku exists")
	})
	mux.HandleFunc("GET /v1/battery-products", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"items": []any{
			map[string]any{"battery_product_id": "99999999-9999-4999-8999-999999999999", "sku": "OTHER", "name": "x"},
			map[string]any{"battery_product_id": f.ex.r.BatteryProductID, "sku": nmc811.BatterySKU, "name": "y"},
		}})
	})
	mux.HandleFunc("POST /v1/passports", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			ProductID string `json:"battery_product_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		if in.ProductID != f.ex.r.BatteryProductID {
			writeEnvelope(w, 404, "NOT_FOUND", "product")
			return
		}
		reply(w, 201, map[string]any{"passport_id": f.ex.r.PassportID})
	})
	mux.HandleFunc("POST /v1/passports/{id}/compile", jobReply("COMPILE_PASSPORT", 202))
	mux.HandleFunc("GET /v1/passports/{id}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"passport_id": f.ex.r.PassportID, "versions": []any{
			map[string]any{"passport_version_id": "88888888-8888-4888-8888-888888888888", "version": 1, "status": "SUPERSEDED"},
			map[string]any{"passport_version_id": demoTestVersion, "version": 2, "status": "COMPILING", "qr_payload": nil},
		}})
	})
	mux.HandleFunc("GET /v1/passport-versions/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.pvPolls++
		signed := f.pvPolls > 2
		f.mu.Unlock()
		v := map[string]any{"passport_version_id": demoTestVersion, "passport_id": f.ex.r.PassportID, "version": 2,
			"status": "COMPILING", "qr_payload": nil, "payload_hash": f.ex.claims.PayloadHash, "proof_root_hash": f.ex.claims.ProofRootHash}
		if signed {
			v["status"] = "SIGNED"
			v["qr_payload"] = f.ex.a.QRPayload
			v["receipt_hash"] = f.ex.claims.ReceiptHash
			v["signature"] = f.ex.claims.Signature
			v["signing_key_id"] = demoTestKeyID
			v["signing_public_key"] = base64.StdEncoding.EncodeToString(f.ex.pub)
		}
		reply(w, 200, v)
	})
	mux.HandleFunc("GET /v1/passport-versions/{id}/payload", raw(f.ex.a.Payload))
	mux.HandleFunc("GET /v1/passport-versions/{id}/proof", raw(f.ex.a.Proof))
	mux.HandleFunc("GET /v1/passport-versions/{id}/receipt", raw(f.ex.a.Receipt))
	mux.HandleFunc("GET /v1/passport-versions/{id}/qr.png", raw(f.ex.a.QRPNG))
	mux.HandleFunc("POST /v1/passport-versions/{id}/activate", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"status": "ACTIVE"})
	})
	mux.HandleFunc("POST /v1/passport-versions/{id}/export", jobReply("EXPORT_PASSPORT", 202))
	mux.HandleFunc("GET /v1/passport-versions/{id}/exports", func(w http.ResponseWriter, r *http.Request) {
		sum := sha256.Sum256(f.exportFile())
		claimed := hex.EncodeToString(sum[:])
		if f.exportSum != "" {
			claimed = f.exportSum
		}
		reply(w, 200, map[string]any{"items": []any{map[string]any{"passport_export_id": f.id(), "format": "JSON",
			"path": "exports/x.json", "size_bytes": len(f.exportFile()), "sha256": claimed}}})
	})
	mux.HandleFunc("GET /v1/passport-versions/{id}/export-file", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("format") != "JSON" {
			writeEnvelope(w, 400, "VALIDATION_ERROR", "format")
			return
		}
		_, _ = w.Write(f.exportFile())
	})
	mux.HandleFunc("POST /v1/passport-versions/{id}/replay", func(w http.ResponseWriter, r *http.Request) {
		if f.mismatch {
			writeEnvelope(w, 409, "REPLAY_MISMATCH", "payload hash differs")
			return
		}
		reply(w, 200, map[string]any{"match": true})
	})
	mux.HandleFunc("GET /v1/signing-keys", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"items": []any{map[string]any{"key_id": demoTestKeyID, "alg": "ED25519",
			"public_key_base64": base64.StdEncoding.EncodeToString(f.ex.pub)}}})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/health/ready" && r.Header.Get("Authorization") != "Bearer "+demoTestToken {
			writeEnvelope(w, 401, "UNAUTHORIZED", "token")
			return
		}
		if r.Method == http.MethodGet && r.URL.Path != "/v1/health/ready" && r.URL.Path != "/v1/signing-keys" &&
			r.URL.Query().Get("tenant_id") != demoDefaultTenant {
			writeEnvelope(w, 400, "VALIDATION_ERROR", "tenant_id")
			return
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var in struct {
				TenantID string `json:"tenant_id"`
			}
			if json.Unmarshal(body, &in) != nil || in.TenantID != demoDefaultTenant {
				writeEnvelope(w, 400, "VALIDATION_ERROR", "tenant_id in the body")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		mux.ServeHTTP(w, r)
	})
}

func runFakeDemo(t *testing.T, f *fakeService) (string, string, error) {
	t.Helper()
	f.jobs = map[string]string{}
	if f.ex == nil {
		f.ex = newDemoExample(t, nil)
	}
	srv := httptest.NewServer(f.handler())
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "demo-out")
	var stdout bytes.Buffer
	d := &demo{c: testClient(srv.URL), out: out, w: &stdout}
	err := d.run(context.Background())
	return stdout.String(), out, err
}

func TestDemoRunAgainstAFakeService(t *testing.T) {
	f := &fakeService{}
	stdout, out, err := runFakeDemo(t, f)
	require.NoError(t, err, stdout)
	for _, want := range []string{"upload BOM", "upload PCF", "upload DUE_DILIGENCE", "snapshot seal", "12/12 cases passed",
		"reused (sku " + nmc811.BatterySKU, "passport version " + demoTestVersion + " (v2", "SIGNED by key " + demoTestKeyID,
		"match: true", "ok   signature", "openssl pkeyutl -verify -pubin -inkey " + filepath.Join(out, filePublicKeyPEM), "total"} {
		require.Contains(t, stdout, want)
	}
	require.NotContains(t, stdout, demoTestToken)
	require.Equal(t, f.uploaded, f.itemsSeen, "the snapshot gets the three uploaded versions")
	require.Len(t, f.uploaded, 3)

	for _, name := range []string{fileQRPNG, fileQRPayload, fileReceipt, filePayload, fileProof, fileSigningKey, fileExport,
		fileReceiptHash, fileSignature, filePublicKeyPEM} {
		_, err := os.Stat(filepath.Join(out, name))
		require.NoError(t, err, name)
	}
	receiptBytes, err := os.ReadFile(filepath.Join(out, fileReceipt))
	require.NoError(t, err)
	require.Equal(t, f.ex.a.Receipt, receiptBytes, "the receipt is written exactly as served")
	var key signingKeyFile
	kb, err := os.ReadFile(filepath.Join(out, fileSigningKey))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(kb, &key))
	require.Equal(t, signingKeyFile{KeyID: demoTestKeyID, PublicKeyBase64: base64.StdEncoding.EncodeToString(f.ex.pub)}, key)
}

func TestDemoRunStopsAtAFailedJob(t *testing.T) {
	for stage, typ := range map[string]string{"upload BOM": "PARSE_FACTS", "snapshot build": "BUILD_SNAPSHOT",
		"rule tests": "RUN_RULE_TESTS", "compile": "COMPILE_PASSPORT", "export JSON": "EXPORT_PASSPORT"} {
		t.Run(stage, func(t *testing.T) {
			stdout, _, err := runFakeDemo(t, &fakeService{failJob: typ})
			require.ErrorContains(t, err, fmt.Sprintf("stage %q: job", stage))
			require.ErrorContains(t, err, "ended DEAD_LETTER after 1 attempt(s): last_error INTERNAL: boom")
			require.Contains(t, stdout, stage)
			require.Contains(t, stdout, "FAILED")
		})
	}
}

func TestDemoRunFailsOnReplayMismatchAndBadExports(t *testing.T) {
	_, _, err := runFakeDemo(t, &fakeService{mismatch: true})
	require.ErrorContains(t, err, `stage "replay"`)
	require.ErrorContains(t, err, "REPLAY_MISMATCH")

	_, _, err = runFakeDemo(t, &fakeService{exportSum: hash.SHA256Hex(nil)})
	require.ErrorContains(t, err, `stage "export JSON"`)

	// A served receipt signed by another key than the version's fails the
	// offline verification.
	_, other, kerr := ed25519.GenerateKey(nil)
	require.NoError(t, kerr)
	ex := newDemoExample(t, other)
	stdout, _, err := runFakeDemo(t, &fakeService{ex: ex})
	require.ErrorContains(t, err, `stage "verify offline"`)
	require.Contains(t, stdout, "FAIL signature")
}

func TestDemoCommandConfiguration(t *testing.T) {
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

	// A service that is not there: the first stage says so.
	out := filepath.Join(t.TempDir(), "out")
	err = run(ctx, []string{"demo", "--url", "http://127.0.0.1:1", "--out", out}, env(map[string]string{"BPC_ADMIN_TOKEN": "t"}), &stdout, &stderr)
	require.ErrorContains(t, err, `stage "service ready"`)
	require.True(t, strings.Contains(err.Error(), "not ready"), err.Error())
}
