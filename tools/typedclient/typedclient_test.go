// Package typedclient runs the typed-client example (examples/typedclient)
// against a service of its own, and holds the example's generated client to
// the document that service serves.
package typedclient

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite examples/typedclient/openapi.json and client/client.gen.go from the served document")

const (
	repoRoot   = "../.."
	exampleDir = repoRoot + "/examples/typedclient"
)

// run runs a command in dir with extra environment and returns its output.
func run(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// service is `bpc serve` built from this repository, on the test database.
type service struct {
	base, token string
}

func startService(t *testing.T, ctx context.Context) *service {
	t.Helper()
	dbURL := os.Getenv("TEST_DATABASE_URL")
	if dbURL == "" {
		t.Fatal("TEST_DATABASE_URL is not set: this test runs `bpc serve` on a real Postgres (scripts/test.sh sets it)")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bpc")
	if out, err := run(ctx, repoRoot, nil, "go", "build", "-o", bin, "./cmd/bpc"); err != nil {
		t.Fatalf("go build ./cmd/bpc: %v\n%s", err, out)
	}
	addr := freePort(t)
	s := &service{base: "http://" + addr, token: randomHex(24)}
	env := []string{"DATABASE_URL=" + dbURL, "BPC_ENV=dev", "BPC_ADMIN_TOKEN=" + s.token, "BPC_HTTP_ADDR=" + addr,
		"BPC_EXPORT_DIR=" + filepath.Join(tmp, "exports"), "BPC_LOG_LEVEL=warn"}
	if out, err := run(ctx, tmp, env, bin, "migrate"); err != nil {
		t.Fatalf("bpc migrate: %v\n%s", err, out)
	}
	logPath := filepath.Join(tmp, "service.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logFile.Close()
		if t.Failed() {
			log, _ := os.ReadFile(logPath)
			t.Logf("service log (last 4000 bytes):\n%s", tail(log, 4000))
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(s.base + "/v1/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("bpc serve exited before it was ready (%v):\n%s", err, tail(log, 4000))
		case <-time.After(250 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("bpc serve was not ready at %s within 2 minutes", s.base)
		}
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// call sends a JSON request with the platform token (or none when token is
// "") and decodes the answer, which must have status want.
func (s *service) call(t *testing.T, method, path, token string, body, out any, want int) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		enc, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

// checkGenerated holds the committed document and client to the served
// document: the client must be what oapi-codegen (default configuration)
// generates from it. With -update both are rewritten.
func checkGenerated(t *testing.T, ctx context.Context, s *service) {
	t.Helper()
	resp, err := http.Get(s.base + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var v any
	if err := json.Unmarshal(served, &v); err != nil {
		t.Fatalf("GET /v1/openapi.json: %v", err)
	}
	doc, _ := json.MarshalIndent(v, "", "  ")
	doc = append(doc, '\n')

	docPath := filepath.Join(exampleDir, "openapi.json")
	clientPath := filepath.Join(exampleDir, "client", "client.gen.go")
	tmp := t.TempDir()
	tmpDoc := filepath.Join(tmp, "openapi.json")
	tmpClient := filepath.Join(tmp, "client.gen.go")
	if err := os.WriteFile(tmpDoc, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	// The same command as examples/typedclient/client/generate.go's.
	if out, err := run(ctx, "..", nil, "go", "tool", "oapi-codegen", "-package", "client", "-o", tmpClient, tmpDoc); err != nil {
		t.Fatalf("oapi-codegen on the served document: %v\n%s", err, out)
	}
	client, err := os.ReadFile(tmpClient)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(docPath, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(clientPath, client, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s and %s", docPath, clientPath)
		return
	}
	for _, f := range []struct {
		path string
		want []byte
	}{{docPath, doc}, {clientPath, client}} {
		have, err := os.ReadFile(f.path)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if !bytes.Equal(have, f.want) {
			t.Errorf("%s is not what the served document generates: regenerate with "+
				"`cd tools && go test ./typedclient -run TestTypedClientExample -update` (needs TEST_DATABASE_URL)", f.path)
		}
	}
}

// The example runs the battery maker's whole integration with a tenant's
// writer key through its generated client; the passport version it reports
// must be ACTIVE and verify publicly.
func TestTypedClientExample(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s := startService(t, ctx)
	checkGenerated(t, ctx, s)
	if *update {
		return
	}

	var tenant struct {
		TenantID string `json:"tenant_id"`
	}
	slug := "typed-client-" + randomHex(4)
	s.call(t, http.MethodPost, "/v1/tenants", s.token, map[string]any{"name": slug, "slug": slug}, &tenant, http.StatusCreated)
	// The tenant's issuer, verified by the platform: without it the
	// passport is SIGNED — ISSUER NOT VERIFIED, not VERIFIED (SPEC §16).
	issuer := map[string]any{"legal_name": "Voltaris Battery Systems GmbH", "country": "DE", "registration_id": "DE123456789012345"}
	s.call(t, http.MethodPut, "/v1/tenants/"+tenant.TenantID+"/issuer", s.token, issuer, nil, http.StatusOK)
	// The verify names the values the platform checked (SPEC §16).
	s.call(t, http.MethodPost, "/v1/tenants/"+tenant.TenantID+"/issuer/verify", s.token, issuer, nil, http.StatusOK)
	var key struct {
		Token string `json:"token"`
	}
	s.call(t, http.MethodPost, "/v1/api-keys", s.token, map[string]any{
		"tenant_id": tenant.TenantID, "name": "typed client example", "role": "writer",
	}, &key, http.StatusCreated)
	if key.Token == "" {
		t.Fatal("POST /v1/api-keys returned no token")
	}

	out, err := run(ctx, exampleDir, []string{"BPC_URL=" + s.base, "BPC_API_KEY=" + key.Token,
		"BPC_ADMIN_TOKEN="}, "go", "run", ".")
	t.Logf("go run ./examples/typedclient:\n%s", out)
	if err != nil {
		t.Fatalf("the example failed: %v", err)
	}
	// Its last line is the result, as JSON.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var result struct {
		PassportVersionID string `json:"passport_version_id"`
		Status            string `json:"status"`
		Verified          bool   `json:"verified"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &result); err != nil || result.PassportVersionID == "" {
		t.Fatalf("the example's last line is not its result: %q (%v)", lines[len(lines)-1], err)
	}
	if result.Status != "ACTIVE" || !result.Verified {
		t.Errorf("the example reports %+v, want ACTIVE and verified", result)
	}

	// Checked here too, without the example's code: with the platform
	// token, and publicly without credentials.
	var version struct {
		Status   string `json:"status"`
		TenantID string `json:"tenant_id"`
	}
	s.call(t, http.MethodGet, "/v1/passport-versions/"+result.PassportVersionID+"?tenant_id="+tenant.TenantID, s.token, nil, &version, http.StatusOK)
	if version.Status != "ACTIVE" {
		t.Errorf("passport version %s is %s, want ACTIVE", result.PassportVersionID, version.Status)
	}
	var public struct {
		Status       string `json:"status"`
		Verification struct {
			Verified bool `json:"verified"`
		} `json:"verification"`
	}
	s.call(t, http.MethodGet, "/public/v1/passport-versions/"+result.PassportVersionID, "", nil, &public, http.StatusOK)
	if !public.Verification.Verified {
		t.Errorf("the public page of %s does not verify: %+v", result.PassportVersionID, public)
	}
}
