package main

// bpc demo: a client that walks the NMC811 sample battery through the whole
// passport pipeline over the admin API of a running service, prints every
// stage with its duration, writes the artifacts to an output directory and
// verifies them offline (hashes, QR payload, Ed25519 signature).

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/proof"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/examples/nmc811"
)

const (
	demoDefaultURL    = "http://127.0.0.1:8080"
	demoDefaultTenant = "00000000-0000-0000-0000-00000000de00"
	demoDefaultOut    = "demo-out"
	// demoJobTimeout bounds every wait: one job, or one state to reach.
	demoJobTimeout = 60 * time.Second
	// demoMaxWait is the longest waitMs the jobs endpoint accepts.
	demoMaxWait = 30 * time.Second
	// demoRequestTimeout bounds one HTTP request (plus waitMs for a long poll).
	demoRequestTimeout = 30 * time.Second
	// demoPollInterval is the delay between polls of a state.
	demoPollInterval = 250 * time.Millisecond
	// demoMaxBody caps a response body (payloads and exports included).
	demoMaxBody = 64 << 20
)

// Job statuses of the SSOT jobs table.
const (
	jobSucceeded  = "SUCCEEDED"
	jobFailed     = "FAILED"
	jobCancelled  = "CANCELLED"
	jobDeadLetter = "DEAD_LETTER"
)

func jobIsTerminal(status string) bool {
	switch status {
	case jobSucceeded, jobFailed, jobCancelled, jobDeadLetter:
		return true
	}
	return false
}

// Files the demo writes to its output directory.
const (
	fileQRPNG        = "qr.png"
	fileQRPayload    = "qr-payload.txt"
	fileReceipt      = "receipt.json"
	filePayload      = "payload.json"
	fileProof        = "proof.json"
	fileSigningKey   = "signing-key.json"
	fileExport       = "export.json"
	fileReceiptHash  = "receipt-hash.bin"
	fileSignature    = "signature.bin"
	filePublicKeyPEM = "public-key.pem"
)

func cmdDemo(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseURL := fs.String("url", or(getenv("BPC_URL"), demoDefaultURL), "base URL of the service (BPC_URL)")
	out := fs.String("out", or(getenv("BPC_DEMO_OUT"), demoDefaultOut), "directory for the artifacts (BPC_DEMO_OUT)")
	tenant := fs.String("tenant", or(getenv("BPC_DEMO_TENANT"), demoDefaultTenant), "tenant id (BPC_DEMO_TENANT)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("demo: unexpected argument %q", fs.Arg(0))
	}
	token := strings.TrimSpace(getenv("BPC_ADMIN_TOKEN"))
	if token == "" {
		return errors.New("demo: BPC_ADMIN_TOKEN is required (scripts/run.sh keeps the dev token in .bpc-dev/admin-token)")
	}
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(*baseURL), "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("demo: --url/BPC_URL must be an http(s) URL like %s, got %q", demoDefaultURL, *baseURL)
	}
	tenantID := strings.ToLower(strings.TrimSpace(*tenant))
	if !hash.IsUUID(tenantID) {
		return fmt.Errorf("demo: --tenant/BPC_DEMO_TENANT must be a UUID, got %q", *tenant)
	}
	if strings.TrimSpace(*out) == "" {
		return errors.New("demo: --out/BPC_DEMO_OUT must not be empty")
	}
	d := &demo{c: newDemoClient(u.String(), token, tenantID), out: *out, w: stdout}
	return d.run(ctx)
}

// ---------------------------------------------------------------------------
// HTTP client

// demoClient calls the admin API of one tenant.
type demoClient struct {
	base   string // no trailing slash
	token  string
	tenant string
	hc     *http.Client

	jobTimeout     time.Duration
	requestTimeout time.Duration
	pollInterval   time.Duration
}

func newDemoClient(base, token, tenant string) *demoClient {
	return &demoClient{
		base: strings.TrimRight(base, "/"), token: token, tenant: tenant,
		hc:             &http.Client{},
		jobTimeout:     demoJobTimeout,
		requestTimeout: demoRequestTimeout,
		pollInterval:   demoPollInterval,
	}
}

// apiError is a response outside 2xx: the HTTP status and, when the body is
// the service's error envelope, its code, message, correlation id and details.
type apiError struct {
	Method        string
	Path          string
	Status        int
	Code          string
	Message       string
	CorrelationID string
	Details       map[string]any
	Body          string // start of a body that is not an error envelope
}

func (e *apiError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: HTTP %d", e.Method, e.Path, e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
		if e.Message != "" {
			fmt.Fprintf(&b, ": %s", e.Message)
		}
		if len(e.Details) > 0 {
			if d, err := json.Marshal(e.Details); err == nil {
				fmt.Fprintf(&b, " %s", d)
			}
		}
		if e.CorrelationID != "" {
			fmt.Fprintf(&b, " (correlation_id %s)", e.CorrelationID)
		}
	} else if e.Body != "" {
		fmt.Fprintf(&b, ": %s", e.Body)
	}
	return b.String()
}

// isAPIError reports whether err is an apiError with the HTTP status.
func isAPIError(err error, status int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == status
}

// apiPath joins path segments to prefix, escaping each: apiPath("/v1/jobs", id).
func apiPath(prefix string, segments ...string) string {
	p := prefix
	for _, s := range segments {
		p += "/" + url.PathEscape(s)
	}
	return p
}

// withTenant adds ?tenant_id= and the key/value pairs kv to path.
func (c *demoClient) withTenant(path string, kv ...string) string {
	q := url.Values{}
	q.Set("tenant_id", c.tenant)
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return path + "?" + q.Encode()
}

// do sends a request with body (JSON-encoded unless nil) and decodes a 2xx
// response into out: JSON unless out is a *[]byte, which receives the raw
// body. A response outside 2xx is an *apiError.
func (c *demoClient) do(ctx context.Context, method, path string, body, out any) error {
	_, err := c.send(ctx, method, path, body, out, c.requestTimeout)
	return err
}

// send is do with a timeout of its own; it returns the HTTP status.
func (c *demoClient) send(ctx context.Context, method, path string, body, out any, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("%s %s: error encoding the request: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, demoMaxBody+1))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s: error reading the response: %w", method, path, err)
	}
	if len(raw) > demoMaxBody {
		return resp.StatusCode, fmt.Errorf("%s %s: response larger than %d bytes", method, path, demoMaxBody)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, newAPIError(method, path, resp.StatusCode, raw)
	}
	switch o := out.(type) {
	case nil:
	case *[]byte:
		*o = raw
	default:
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: HTTP %d with a body that does not decode: %w (body: %s)",
				method, path, resp.StatusCode, err, snippet(raw))
		}
	}
	return resp.StatusCode, nil
}

func newAPIError(method, path string, status int, body []byte) *apiError {
	e := &apiError{Method: method, Path: path, Status: status}
	var env struct {
		Error *struct {
			Code          string         `json:"code"`
			Message       string         `json:"message"`
			CorrelationID string         `json:"correlation_id"`
			Details       map[string]any `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil && env.Error.Code != "" {
		e.Code, e.Message = env.Error.Code, env.Error.Message
		e.CorrelationID, e.Details = env.Error.CorrelationID, env.Error.Details
	} else {
		e.Body = snippet(body)
	}
	return e
}

// snippet is the start of a body for an error message, on one line.
func snippet(b []byte) string {
	const max = 300
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// demoJob is a job as the API returns it.
type demoJob struct {
	JobID      string          `json:"job_id"`
	Type       string          `json:"type"`
	Status     string          `json:"status"`
	Attempts   int             `json:"attempts"`
	LastError  json.RawMessage `json:"last_error"`
	RiverJobID int64           `json:"river_job_id"`
	Payload    json.RawMessage `json:"payload"`
}

// jobLastError is a job's last_error.
type jobLastError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Attempt int    `json:"attempt"`
	At      string `json:"at"`
}

// lastError decodes last_error; nil when there is none.
func (j *demoJob) lastError() *jobLastError {
	if len(j.LastError) == 0 || string(j.LastError) == "null" {
		return nil
	}
	var le jobLastError
	if err := json.Unmarshal(j.LastError, &le); err != nil {
		return &jobLastError{Message: snippet(j.LastError)}
	}
	return &le
}

// jobResponse is a response carrying a job, as {"job": {...}} or, should an
// endpoint return the bare job, as the job itself.
type jobResponse struct {
	Job *demoJob `json:"job"`
	demoJob
}

func (r *jobResponse) job() *demoJob {
	if r.Job != nil {
		return r.Job
	}
	if r.JobID != "" {
		return &r.demoJob
	}
	return nil
}

// jobFailedError is a job that ended in a status other than SUCCEEDED.
type jobFailedError struct {
	Stage string
	Job   demoJob
}

func (e *jobFailedError) Error() string {
	msg := fmt.Sprintf("stage %q: job %s (%s) ended %s after %d attempt(s)",
		e.Stage, e.Job.JobID, e.Job.Type, e.Job.Status, e.Job.Attempts)
	if le := e.Job.lastError(); le != nil {
		code := le.Code
		if code == "" {
			code = "ERROR"
		}
		return msg + ": last_error " + code + ": " + le.Message
	}
	return msg + " (no last_error recorded)"
}

// waitJob long-polls the job until it is terminal, for at most jobTimeout.
// SUCCEEDED returns the job; FAILED, CANCELLED and DEAD_LETTER are a
// *jobFailedError naming the stage and the job's last_error.
func (c *demoClient) waitJob(ctx context.Context, stage string, job *demoJob) (*demoJob, error) {
	if job == nil || job.JobID == "" {
		return nil, errors.New("the response carried no job")
	}
	cur := *job
	deadline := time.Now().Add(c.jobTimeout)
	for !jobIsTerminal(cur.Status) {
		remaining := time.Until(deadline)
		wait := min(remaining, demoMaxWait).Truncate(time.Millisecond)
		if wait <= 0 {
			return nil, fmt.Errorf("job %s (%s) still %s after %s", cur.JobID, cur.Type, cur.Status, c.jobTimeout)
		}
		started := time.Now()
		var next demoJob
		path := c.withTenant(apiPath("/v1/jobs", cur.JobID), "waitMs", strconv.FormatInt(wait.Milliseconds(), 10))
		if _, err := c.send(ctx, http.MethodGet, path, nil, &next, wait+c.requestTimeout); err != nil {
			return nil, fmt.Errorf("waiting for job %s (%s): %w", cur.JobID, cur.Type, err)
		}
		if next.JobID == "" || next.Status == "" {
			return nil, fmt.Errorf("waiting for job %s: the response is not a job", cur.JobID)
		}
		cur = next
		// A server that answers at once (no long poll) must not be hammered.
		if !jobIsTerminal(cur.Status) && time.Since(started) < c.pollInterval {
			if err := sleepCtx(ctx, c.pollInterval); err != nil {
				return nil, err
			}
		}
	}
	if cur.Status != jobSucceeded {
		return nil, &jobFailedError{Stage: stage, Job: cur}
	}
	return &cur, nil
}

// poll calls check every pollInterval until it reports done, fails, or
// jobTimeout passes; check's state string describes where things stand.
func (c *demoClient) poll(ctx context.Context, what string, check func() (done bool, state string, err error)) error {
	deadline := time.Now().Add(c.jobTimeout)
	for {
		done, state, err := check()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s (last seen: %s)", c.jobTimeout, what, state)
		}
		if err := sleepCtx(ctx, c.pollInterval); err != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ---------------------------------------------------------------------------
// API shapes used by the demo

type documentVersion struct {
	DocumentVersionID string          `json:"document_version_id"`
	Status            string          `json:"status"`
	FactCount         int             `json:"fact_count"`
	Error             json.RawMessage `json:"error"`
}

type passportVersion struct {
	PassportVersionID string  `json:"passport_version_id"`
	PassportID        string  `json:"passport_id"`
	Version           int     `json:"version"`
	Status            string  `json:"status"`
	PayloadHash       string  `json:"payload_hash"`
	ProofRootHash     string  `json:"proof_root_hash"`
	ReceiptHash       string  `json:"receipt_hash"`
	Signature         string  `json:"signature"`
	SigningKeyID      string  `json:"signing_key_id"`
	SigningPublicKey  string  `json:"signing_public_key"`
	QRPayload         *string `json:"qr_payload"`
}

type passportExport struct {
	PassportExportID string `json:"passport_export_id"`
	Format           string `json:"format"`
	Path             string `json:"path"`
	SizeBytes        int64  `json:"size_bytes"`
	SHA256           string `json:"sha256"`
}

// ---------------------------------------------------------------------------
// The pipeline

// demo is one run: the client, where the output goes and what the stages
// produced so far.
type demo struct {
	c   *demoClient
	out string
	w   io.Writer

	current string // name of the running stage
	total   time.Duration

	docVersionIDs []string
	snapshotID    string
	rulePkgVerID  string
	productID     string
	passportID    string
	version       passportVersion
	publicKey     ed25519.PublicKey
}

// stage runs fn, printing one line with the stage name, its duration and
// fn's short result. Errors are prefixed with the stage name.
func (d *demo) stage(name string, fn func() (string, error)) error {
	d.current = name
	start := time.Now()
	res, err := fn()
	took := time.Since(start)
	d.total += took
	if err != nil {
		fmt.Fprintf(d.w, "  %-22s %7d ms  FAILED\n", name, took.Milliseconds())
		var jf *jobFailedError
		if errors.As(err, &jf) {
			return err // names the stage already
		}
		if isAPIError(err, http.StatusUnauthorized) {
			return fmt.Errorf("stage %q: %w (is BPC_ADMIN_TOKEN the service's admin token?)", name, err)
		}
		return fmt.Errorf("stage %q: %w", name, err)
	}
	fmt.Fprintf(d.w, "  %-22s %7d ms  %s\n", name, took.Milliseconds(), res)
	return nil
}

// demoStep is a stage of the pipeline: its name and what it does.
type demoStep struct {
	name string
	fn   func(context.Context) (string, error)
}

func (d *demo) run(ctx context.Context) error {
	fmt.Fprintf(d.w, "BPC demo: NMC811 sample (%s) via %s, tenant %s, artifacts in %s/\n\n",
		nmc811.BatterySKU, d.c.base, d.c.tenant, d.out)
	if err := os.MkdirAll(d.out, 0o755); err != nil {
		return fmt.Errorf("demo: error creating the output directory: %w", err)
	}
	docs := []struct{ kind, file string }{
		{"BOM", nmc811.DocBOM},
		{"PCF", nmc811.DocPCF},
		{"DUE_DILIGENCE", nmc811.DocDueDiligence},
	}
	steps := []demoStep{{"service ready", d.ready}}
	for _, doc := range docs {
		steps = append(steps, demoStep{"upload " + doc.kind, func(ctx context.Context) (string, error) {
			return d.upload(ctx, doc.kind, doc.file)
		}})
	}
	steps = append(steps, []demoStep{
		{"snapshot create+items", d.snapshotCreate},
		{"snapshot build", d.snapshotBuild},
		{"snapshot seal", d.snapshotSeal},
		{"rule package", d.rulePackage},
		{"rule tests", d.ruleTests},
		{"rule publish", d.rulePublish},
		{"battery product", d.batteryProduct},
		{"passport", d.passport},
		{"compile", d.compile},
		{"sign + QR", d.signAndQR},
		{"activate", d.activate},
		{"export JSON", d.export},
		{"replay", d.replay},
		{"artifacts", d.artifacts},
	}...)
	for _, s := range steps {
		if err := d.stage(s.name, func() (string, error) { return s.fn(ctx) }); err != nil {
			return err
		}
	}

	var rep verifyReport
	err := d.stage("verify offline", func() (string, error) {
		a, err := loadArtifacts(d.out)
		if err != nil {
			return "", err
		}
		rep, err = verifyArtifacts(a, d.claims())
		return fmt.Sprintf("%d checks", len(rep.Checks)), err
	})
	if len(rep.Checks) > 0 {
		fmt.Fprintf(d.w, "\nOffline verification of %s/:\n", d.out)
		for _, c := range rep.Checks {
			mark := "ok  "
			if !c.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(d.w, "  %s %-20s %s\n", mark, c.Name, c.Detail)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(d.w, "\nVerify the signature with openssl (3.x):\n  openssl pkeyutl -verify -pubin -inkey %s -rawin -in %s -sigfile %s\n",
		filepath.Join(d.out, filePublicKeyPEM), filepath.Join(d.out, fileReceiptHash), filepath.Join(d.out, fileSignature))
	fmt.Fprintf(d.w, "\n  %-22s %7d ms  passport version %s ACTIVE and verified\n", "total", d.total.Milliseconds(), d.version.PassportVersionID)
	return nil
}

// claims is what the API said about the passport version, for verifyArtifacts.
func (d *demo) claims() demoClaims {
	return demoClaims{
		PassportVersionID: d.version.PassportVersionID,
		PayloadHash:       d.version.PayloadHash,
		ProofRootHash:     d.version.ProofRootHash,
		ReceiptHash:       d.version.ReceiptHash,
		Signature:         d.version.Signature,
		SigningKeyID:      d.version.SigningKeyID,
		PublicKey:         d.publicKey,
	}
}

func (d *demo) ready(ctx context.Context) (string, error) {
	if err := d.c.do(ctx, http.MethodGet, "/v1/health/ready", nil, nil); err != nil {
		return "", fmt.Errorf("the service is not ready at %s (start it with `make run`): %w", d.c.base, err)
	}
	return "ready", nil
}

func (d *demo) upload(ctx context.Context, kind, file string) (string, error) {
	content, err := nmc811.Document(file)
	if err != nil {
		return "", err
	}
	var doc struct {
		DocumentID string `json:"document_id"`
	}
	err = d.c.do(ctx, http.MethodPost, "/v1/documents",
		map[string]any{"tenant_id": d.c.tenant, "kind": kind, "name": "NMC811 " + file}, &doc)
	if err != nil {
		return "", err
	}
	if doc.DocumentID == "" {
		return "", errors.New("POST /v1/documents returned no document_id")
	}
	var up struct {
		DocumentVersion documentVersion `json:"document_version"`
		Job             *demoJob        `json:"job"`
	}
	err = d.c.do(ctx, http.MethodPost, apiPath("/v1/documents", doc.DocumentID, "versions"), map[string]any{
		"tenant_id": d.c.tenant, "mime_type": "application/json",
		"content": base64.StdEncoding.EncodeToString(content),
	}, &up)
	if err != nil {
		return "", err
	}
	dvID := up.DocumentVersion.DocumentVersionID
	if dvID == "" {
		return "", errors.New("the upload response carried no document_version.document_version_id")
	}
	jobNote := "already uploaded, no new job"
	if up.Job != nil {
		job, err := d.c.waitJob(ctx, d.current, up.Job)
		if err != nil {
			return "", err
		}
		jobNote = fmt.Sprintf("%s %s", job.Type, job.Status)
	}
	var dv documentVersion
	err = d.c.poll(ctx, "document version "+dvID+" to be VALIDATED", func() (bool, string, error) {
		if err := d.c.do(ctx, http.MethodGet, d.c.withTenant(apiPath("/v1/document-versions", dvID)), nil, &dv); err != nil {
			return false, "", err
		}
		switch dv.Status {
		case "VALIDATED":
			return true, dv.Status, nil
		case "REJECTED":
			return false, dv.Status, fmt.Errorf("document version %s was REJECTED: %s", dvID, snippet(dv.Error))
		}
		return false, dv.Status, nil
	})
	if err != nil {
		return "", err
	}
	d.docVersionIDs = append(d.docVersionIDs, dvID)
	return fmt.Sprintf("document %s version %s VALIDATED, %d facts (%s)", doc.DocumentID, dvID, dv.FactCount, jobNote), nil
}

func (d *demo) snapshotCreate(ctx context.Context) (string, error) {
	var snap struct {
		SnapshotID string `json:"snapshot_id"`
		Status     string `json:"status"`
	}
	if err := d.c.do(ctx, http.MethodPost, "/v1/snapshots", map[string]any{"tenant_id": d.c.tenant}, &snap); err != nil {
		return "", err
	}
	if snap.SnapshotID == "" {
		return "", errors.New("POST /v1/snapshots returned no snapshot_id")
	}
	d.snapshotID = snap.SnapshotID
	var items struct {
		Snapshot struct {
			ItemCount int `json:"item_count"`
		} `json:"snapshot"`
		Added json.RawMessage `json:"added"`
	}
	err := d.c.do(ctx, http.MethodPost, apiPath("/v1/snapshots", d.snapshotID, "items"),
		map[string]any{"tenant_id": d.c.tenant, "document_version_ids": d.docVersionIDs}, &items)
	if err != nil {
		return "", err
	}
	if items.Snapshot.ItemCount == 0 {
		return "", fmt.Errorf("snapshot %s has no items after adding %d document versions", d.snapshotID, len(d.docVersionIDs))
	}
	return fmt.Sprintf("snapshot %s %s, %d items (added %s)", d.snapshotID, snap.Status, items.Snapshot.ItemCount, snippet(items.Added)), nil
}

// runJob posts body to path, expects a job back and waits for it.
func (d *demo) runJob(ctx context.Context, path string, body any) (*demoJob, error) {
	var r jobResponse
	if err := d.c.do(ctx, http.MethodPost, path, body, &r); err != nil {
		return nil, err
	}
	if r.job() == nil {
		return nil, fmt.Errorf("POST %s returned no job", path)
	}
	return d.c.waitJob(ctx, d.current, r.job())
}

func jobSummary(j *demoJob) string {
	return fmt.Sprintf("job %s %s %s (attempts %d)", j.JobID, j.Type, j.Status, j.Attempts)
}

func (d *demo) snapshotBuild(ctx context.Context) (string, error) {
	job, err := d.runJob(ctx, apiPath("/v1/snapshots", d.snapshotID, "build"), map[string]any{"tenant_id": d.c.tenant})
	if err != nil {
		return "", err
	}
	return jobSummary(job), nil
}

func (d *demo) snapshotSeal(ctx context.Context) (string, error) {
	var s struct {
		Status       string `json:"status"`
		SnapshotHash string `json:"snapshot_hash"`
	}
	if err := d.c.do(ctx, http.MethodPost, apiPath("/v1/snapshots", d.snapshotID, "seal"), map[string]any{"tenant_id": d.c.tenant}, &s); err != nil {
		return "", err
	}
	if s.Status != "SEALED" || s.SnapshotHash == "" {
		return "", fmt.Errorf("snapshot %s is %q with hash %q after sealing, want SEALED with a hash", d.snapshotID, s.Status, s.SnapshotHash)
	}
	return "SEALED, snapshot_hash " + s.SnapshotHash, nil
}

func (d *demo) rulePackage(ctx context.Context) (string, error) {
	var pkg struct {
		RulePackageID string `json:"rule_package_id"`
	}
	// Names are unique per tenant: a repeat within the same second gets a suffix.
	base := fmt.Sprintf("nmc811-demo-%d", time.Now().Unix())
	name := base
	for i := 2; ; i++ {
		err := d.c.do(ctx, http.MethodPost, "/v1/rule-packages", map[string]any{"tenant_id": d.c.tenant, "name": name}, &pkg)
		if err == nil {
			break
		}
		if !isAPIError(err, http.StatusConflict) || i > 5 {
			return "", err
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
	if pkg.RulePackageID == "" {
		return "", errors.New("POST /v1/rule-packages returned no rule_package_id")
	}
	var ver struct {
		RulePackageVersionID string `json:"rule_package_version_id"`
		Status               string `json:"status"`
	}
	err := d.c.do(ctx, http.MethodPost, apiPath("/v1/rule-packages", pkg.RulePackageID, "versions"), map[string]any{
		"tenant_id": d.c.tenant, "dsl_source": nmc811.Rules(), "tests_source": nmc811.Tests(),
	}, &ver)
	if err != nil {
		return "", err
	}
	if ver.RulePackageVersionID == "" {
		return "", errors.New("the rule package version response carried no rule_package_version_id")
	}
	d.rulePkgVerID = ver.RulePackageVersionID
	return fmt.Sprintf("package %s (%s), version %s %s", pkg.RulePackageID, name, ver.RulePackageVersionID, ver.Status), nil
}

func (d *demo) ruleTests(ctx context.Context) (string, error) {
	job, err := d.runJob(ctx, apiPath("/v1/rule-package-versions", d.rulePkgVerID, "test"),
		map[string]any{"tenant_id": d.c.tenant, "seed": 42})
	if err != nil {
		return "", err
	}
	var runs struct {
		Items []struct {
			Status       string          `json:"status"`
			TotalCases   int             `json:"total_cases"`
			Passed       int             `json:"passed"`
			Failed       int             `json:"failed"`
			FirstFailure json.RawMessage `json:"first_failure"`
		} `json:"items"`
	}
	if err := d.c.do(ctx, http.MethodGet, d.c.withTenant(apiPath("/v1/rule-package-versions", d.rulePkgVerID, "test-runs")), nil, &runs); err != nil {
		return "", err
	}
	if len(runs.Items) == 0 {
		return "", fmt.Errorf("%s succeeded but rule package version %s lists no test run", job.Type, d.rulePkgVerID)
	}
	run := runs.Items[0]
	if run.Failed > 0 || run.TotalCases == 0 || run.Passed != run.TotalCases {
		return "", fmt.Errorf("rule tests %s: %d/%d passed, %d failed; first failure: %s",
			run.Status, run.Passed, run.TotalCases, run.Failed, snippet(run.FirstFailure))
	}
	var ver struct {
		Status string `json:"status"`
	}
	if err := d.c.do(ctx, http.MethodGet, d.c.withTenant(apiPath("/v1/rule-package-versions", d.rulePkgVerID)), nil, &ver); err != nil {
		return "", err
	}
	if ver.Status != "VALIDATED" {
		return "", fmt.Errorf("rule package version %s is %q after its tests passed, want VALIDATED", d.rulePkgVerID, ver.Status)
	}
	return fmt.Sprintf("%d/%d cases passed (%s), version VALIDATED", run.Passed, run.TotalCases, run.Status), nil
}

func (d *demo) rulePublish(ctx context.Context) (string, error) {
	var ver struct {
		Status string `json:"status"`
	}
	err := d.c.do(ctx, http.MethodPost, apiPath("/v1/rule-package-versions", d.rulePkgVerID, "publish"), map[string]any{"tenant_id": d.c.tenant}, &ver)
	if err != nil {
		return "", err
	}
	if ver.Status != "PUBLISHED" {
		return "", fmt.Errorf("rule package version %s is %q after publishing", d.rulePkgVerID, ver.Status)
	}
	return "version " + d.rulePkgVerID + " PUBLISHED", nil
}

func (d *demo) batteryProduct(ctx context.Context) (string, error) {
	var p struct {
		BatteryProductID string `json:"battery_product_id"`
	}
	err := d.c.do(ctx, http.MethodPost, "/v1/battery-products", map[string]any{
		"tenant_id": d.c.tenant, "sku": nmc811.BatterySKU, "name": "NMC811 75 kWh EV battery pack (demo)",
	}, &p)
	switch {
	case err == nil:
		if p.BatteryProductID == "" {
			return "", errors.New("POST /v1/battery-products returned no battery_product_id")
		}
		d.productID = p.BatteryProductID
		return fmt.Sprintf("%s created (sku %s)", d.productID, nmc811.BatterySKU), nil
	case isAPIError(err, http.StatusConflict):
		var list struct {
			Items []struct {
				BatteryProductID string `json:"battery_product_id"`
				SKU              string `json:"sku"`
			} `json:"items"`
		}
		if err := d.c.do(ctx, http.MethodGet, d.c.withTenant("/v1/battery-products"), nil, &list); err != nil {
			return "", err
		}
		for _, it := range list.Items {
			if it.SKU == nmc811.BatterySKU && it.BatteryProductID != "" {
				d.productID = it.BatteryProductID
				return fmt.Sprintf("%s reused (sku %s)", d.productID, nmc811.BatterySKU), nil
			}
		}
		return "", fmt.Errorf("sku %s exists (409) but GET /v1/battery-products does not list it", nmc811.BatterySKU)
	default:
		return "", err
	}
}

func (d *demo) passport(ctx context.Context) (string, error) {
	var p struct {
		PassportID string `json:"passport_id"`
	}
	err := d.c.do(ctx, http.MethodPost, "/v1/passports", map[string]any{"tenant_id": d.c.tenant, "battery_product_id": d.productID}, &p)
	if err != nil {
		return "", err
	}
	if p.PassportID == "" {
		return "", errors.New("POST /v1/passports returned no passport_id")
	}
	d.passportID = p.PassportID
	return "passport " + d.passportID, nil
}

func (d *demo) compile(ctx context.Context) (string, error) {
	job, err := d.runJob(ctx, apiPath("/v1/passports", d.passportID, "compile"), map[string]any{
		"tenant_id": d.c.tenant, "snapshot_id": d.snapshotID, "rule_package_version_id": d.rulePkgVerID,
	})
	if err != nil {
		return "", err
	}
	var p struct {
		Versions []passportVersion `json:"versions"`
	}
	if err := d.c.do(ctx, http.MethodGet, d.c.withTenant(apiPath("/v1/passports", d.passportID)), nil, &p); err != nil {
		return "", err
	}
	if len(p.Versions) == 0 {
		return "", fmt.Errorf("%s succeeded but passport %s has no version", job.Type, d.passportID)
	}
	newest := slices.MaxFunc(p.Versions, func(a, b passportVersion) int { return a.Version - b.Version })
	if newest.PassportVersionID == "" {
		return "", fmt.Errorf("passport %s lists a version without passport_version_id", d.passportID)
	}
	d.version = newest
	return fmt.Sprintf("%s, passport version %s (v%d, %s)", jobSummary(job), newest.PassportVersionID, newest.Version, newest.Status), nil
}

// signAndQR waits for the follow-up jobs (SIGN_PASSPORT, then GENERATE_QR):
// the version must become SIGNED with a QR payload. A follow-up job of this
// version that fails ends the wait at once.
func (d *demo) signAndQR(ctx context.Context) (string, error) {
	id := d.version.PassportVersionID
	var v passportVersion
	err := d.c.poll(ctx, "passport version "+id+" to be SIGNED with a QR payload", func() (bool, string, error) {
		if err := d.c.do(ctx, http.MethodGet, d.c.withTenant(apiPath("/v1/passport-versions", id)), nil, &v); err != nil {
			return false, "", err
		}
		state := fmt.Sprintf("status %s, qr_payload %v", v.Status, v.QRPayload != nil)
		if (v.Status == "SIGNED" || v.Status == "ACTIVE") && v.QRPayload != nil && *v.QRPayload != "" {
			return true, state, nil
		}
		if err := d.followUpFailed(ctx, id); err != nil {
			return false, state, err
		}
		return false, state, nil
	})
	if err != nil {
		return "", err
	}
	d.version = v
	return fmt.Sprintf("%s by key %s, receipt_hash %s", v.Status, v.SigningKeyID, v.ReceiptHash), nil
}

// followUpFailed looks for a SIGN_PASSPORT or GENERATE_QR job of the passport
// version that ended without success. Listing is best effort: an error there
// only means the wait goes on.
func (d *demo) followUpFailed(ctx context.Context, versionID string) error {
	for _, typ := range []string{"SIGN_PASSPORT", "GENERATE_QR"} {
		var page struct {
			Items []demoJob `json:"items"`
		}
		if d.c.do(ctx, http.MethodGet, d.c.withTenant("/v1/jobs", "type", typ, "limit", "50"), nil, &page) != nil {
			continue
		}
		for _, j := range page.Items {
			var p struct {
				PassportVersionID string `json:"passport_version_id"`
			}
			if json.Unmarshal(j.Payload, &p) != nil || p.PassportVersionID != versionID {
				continue
			}
			if jobIsTerminal(j.Status) && j.Status != jobSucceeded {
				return &jobFailedError{Stage: d.current, Job: j}
			}
		}
	}
	return nil
}

func (d *demo) activate(ctx context.Context) (string, error) {
	var r struct {
		Status string `json:"status"`
	}
	err := d.c.do(ctx, http.MethodPost, apiPath("/v1/passport-versions", d.version.PassportVersionID, "activate"), map[string]any{"tenant_id": d.c.tenant}, &r)
	if err != nil {
		return "", err
	}
	if r.Status != "ACTIVE" {
		return "", fmt.Errorf("passport version is %q after activation, want ACTIVE", r.Status)
	}
	return "version " + d.version.PassportVersionID + " ACTIVE", nil
}

func (d *demo) export(ctx context.Context) (string, error) {
	id := d.version.PassportVersionID
	job, err := d.runJob(ctx, apiPath("/v1/passport-versions", id, "export"), map[string]any{"tenant_id": d.c.tenant, "format": "JSON"})
	if err != nil {
		return "", err
	}
	var list struct {
		Items []passportExport `json:"items"`
	}
	if err := d.c.do(ctx, http.MethodGet, d.c.withTenant(apiPath("/v1/passport-versions", id, "exports")), nil, &list); err != nil {
		return "", err
	}
	i := slices.IndexFunc(list.Items, func(e passportExport) bool { return e.Format == "JSON" })
	if i < 0 {
		return "", fmt.Errorf("%s succeeded but the version lists no JSON export", job.Type)
	}
	exp := list.Items[i]
	var file []byte
	if err := d.c.do(ctx, http.MethodGet, d.c.withTenant(apiPath("/v1/passport-versions", id, "export-file"), "format", "JSON"), nil, &file); err != nil {
		return "", err
	}
	sum := sha256.Sum256(file)
	if exp.SHA256 != "" && !strings.EqualFold(exp.SHA256, hex.EncodeToString(sum[:])) {
		return "", fmt.Errorf("export file has SHA-256 %x, the export record says %s", sum, exp.SHA256)
	}
	if exp.SizeBytes != 0 && exp.SizeBytes != int64(len(file)) {
		return "", fmt.Errorf("export file has %d bytes, the export record says %d", len(file), exp.SizeBytes)
	}
	if err := os.WriteFile(filepath.Join(d.out, fileExport), file, 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("export %s, %d bytes, sha256 %x → %s", exp.PassportExportID, len(file), sum, fileExport), nil
}

func (d *demo) replay(ctx context.Context) (string, error) {
	var r struct {
		Match *bool `json:"match"`
	}
	err := d.c.do(ctx, http.MethodPost, apiPath("/v1/passport-versions", d.version.PassportVersionID, "replay"), map[string]any{"tenant_id": d.c.tenant}, &r)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Code == "REPLAY_MISMATCH" {
			return "", fmt.Errorf("the replay did not reproduce the passport: %w", err)
		}
		return "", err
	}
	if r.Match == nil || !*r.Match {
		return "", errors.New("the replay answered without match: true")
	}
	return "recompiled from the sealed snapshot: byte-identical (match: true)", nil
}

// artifacts downloads the version's stored bytes, cross-checks its signing
// key against /v1/signing-keys and writes everything to the output directory.
func (d *demo) artifacts(ctx context.Context) (string, error) {
	v := d.version
	id := v.PassportVersionID
	get := func(what string) ([]byte, error) {
		var b []byte
		err := d.c.do(ctx, http.MethodGet, d.c.withTenant(apiPath("/v1/passport-versions", id, what)), nil, &b)
		return b, err
	}
	var a demoArtifacts
	var err error
	if a.Payload, err = get("payload"); err != nil {
		return "", err
	}
	if a.Proof, err = get("proof"); err != nil {
		return "", err
	}
	if a.Receipt, err = get("receipt"); err != nil {
		return "", err
	}
	if a.QRPNG, err = get("qr.png"); err != nil {
		return "", err
	}
	if v.QRPayload == nil {
		return "", errors.New("the passport version has no qr_payload")
	}
	a.QRPayload = *v.QRPayload

	// The version's key, cross-checked against the service's key list.
	pub, err := base64.StdEncoding.DecodeString(v.SigningPublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return "", fmt.Errorf("signing_public_key of the version is not base64 of %d bytes", ed25519.PublicKeySize)
	}
	var keys struct {
		Items []struct {
			KeyID           string `json:"key_id"`
			Alg             string `json:"alg"`
			PublicKeyBase64 string `json:"public_key_base64"`
		} `json:"items"`
	}
	if err := d.c.do(ctx, http.MethodGet, "/v1/signing-keys", nil, &keys); err != nil {
		return "", err
	}
	found := false
	for _, k := range keys.Items {
		if k.KeyID != v.SigningKeyID {
			continue
		}
		listed, err := base64.StdEncoding.DecodeString(k.PublicKeyBase64)
		if err != nil || !bytes.Equal(listed, pub) {
			return "", fmt.Errorf("key %s: /v1/signing-keys lists another public key than the version carries", k.KeyID)
		}
		if k.Alg != "" && k.Alg != receipt.SignatureAlg {
			return "", fmt.Errorf("key %s: /v1/signing-keys says alg %q, want %s", k.KeyID, k.Alg, receipt.SignatureAlg)
		}
		found = true
	}
	if !found {
		return "", fmt.Errorf("signing key %q of the version is not listed by /v1/signing-keys", v.SigningKeyID)
	}
	d.publicKey = ed25519.PublicKey(pub)
	if err := completeArtifacts(&a, v.SigningKeyID, d.publicKey); err != nil {
		// Keep what the service served, for a look at what is wrong.
		_ = writeArtifacts(d.out, a)
		return "", err
	}
	if err := writeArtifacts(d.out, a); err != nil {
		return "", err
	}
	return fmt.Sprintf("payload %d B, proof %d B, receipt %d B, qr.png %d B → %s/", len(a.Payload), len(a.Proof), len(a.Receipt), len(a.QRPNG), d.out), nil
}

// ---------------------------------------------------------------------------
// Offline verification

// demoArtifacts are the files of the output directory (all but the export).
type demoArtifacts struct {
	QRPayload   string // qr-payload.txt
	QRPNG       []byte // qr.png
	Payload     []byte // payload.json
	Proof       []byte // proof.json
	Receipt     []byte // receipt.json, signed
	SigningKey  []byte // signing-key.json: {"key_id", "public_key_base64"}
	PublicKey   []byte // public-key.pem
	ReceiptHash []byte // receipt-hash.bin: the 32 raw bytes signed
	Signature   []byte // signature.bin: the raw 64-byte signature
}

// signingKeyFile is the content of signing-key.json.
type signingKeyFile struct {
	KeyID           string `json:"key_id"`
	PublicKeyBase64 string `json:"public_key_base64"`
}

// completeArtifacts derives the convenience files from the served ones: the
// raw receipt hash and signature from the receipt, and the key files.
func completeArtifacts(a *demoArtifacts, keyID string, pub ed25519.PublicKey) error {
	kf, err := json.MarshalIndent(signingKeyFile{KeyID: keyID, PublicKeyBase64: base64.StdEncoding.EncodeToString(pub)}, "", "  ")
	if err != nil {
		return err
	}
	a.SigningKey = append(kf, '\n')
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return fmt.Errorf("error encoding the public key: %w", err)
	}
	a.PublicKey = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	r, err := receipt.Parse(a.Receipt)
	if err != nil {
		return fmt.Errorf("the served receipt is not a valid BPC-RECEIPT-1: %w", err)
	}
	if r.Signature == "" {
		return errors.New("the served receipt is not signed")
	}
	_, raw, err := receipt.Hash(r)
	if err != nil {
		return err
	}
	a.ReceiptHash = raw[:]
	if a.Signature, err = base64.StdEncoding.DecodeString(r.Signature); err != nil {
		return fmt.Errorf("the receipt's signature is not base64: %w", err)
	}
	return nil
}

// artifactFiles maps each file name to its field in a.
func artifactFiles(a *demoArtifacts) []struct {
	name string
	data *[]byte
} {
	return []struct {
		name string
		data *[]byte
	}{
		{fileQRPNG, &a.QRPNG},
		{filePayload, &a.Payload},
		{fileProof, &a.Proof},
		{fileReceipt, &a.Receipt},
		{fileSigningKey, &a.SigningKey},
		{filePublicKeyPEM, &a.PublicKey},
		{fileReceiptHash, &a.ReceiptHash},
		{fileSignature, &a.Signature},
	}
}

// writeArtifacts writes the non-empty artifacts to dir, overwriting.
func writeArtifacts(dir string, a demoArtifacts) error {
	if a.QRPayload != "" {
		if err := os.WriteFile(filepath.Join(dir, fileQRPayload), []byte(a.QRPayload), 0o644); err != nil {
			return err
		}
	}
	for _, f := range artifactFiles(&a) {
		if len(*f.data) == 0 {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, f.name), *f.data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// loadArtifacts reads the artifacts written by writeArtifacts.
func loadArtifacts(dir string) (demoArtifacts, error) {
	var a demoArtifacts
	qp, err := os.ReadFile(filepath.Join(dir, fileQRPayload))
	if err != nil {
		return a, err
	}
	a.QRPayload = string(qp)
	for _, f := range artifactFiles(&a) {
		if *f.data, err = os.ReadFile(filepath.Join(dir, f.name)); err != nil {
			return a, err
		}
	}
	return a, nil
}

// demoClaims are what the API said about the passport version; each
// non-empty one must agree with the artifacts.
type demoClaims struct {
	PassportVersionID string
	PayloadHash       string
	ProofRootHash     string
	ReceiptHash       string
	Signature         string // base64
	SigningKeyID      string
	PublicKey         ed25519.PublicKey
}

type verifyCheck struct {
	Name   string
	OK     bool
	Detail string
}

type verifyReport struct {
	Checks []verifyCheck
}

func (r *verifyReport) pass(name, format string, args ...any) {
	r.Checks = append(r.Checks, verifyCheck{Name: name, OK: true, Detail: fmt.Sprintf(format, args...)})
}

func (r *verifyReport) fail(name, format string, args ...any) {
	r.Checks = append(r.Checks, verifyCheck{Name: name, Detail: fmt.Sprintf(format, args...)})
}

// err is nil when every check passed, else names the failed ones.
func (r *verifyReport) err() error {
	var failed []string
	for _, c := range r.Checks {
		if !c.OK {
			failed = append(failed, c.Name+": "+c.Detail)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("offline verification failed: %s", strings.Join(failed, "; "))
}

// verifyArtifacts checks the artifacts against each other and the claims,
// using nothing but their bytes: the QR payload's pv/ph/pr/rh against the
// version id, SHA-256 of the payload, the proof's verified root_hash and the
// receipt hash recomputed without the signature; the receipt's own hashes;
// the key files; and the Ed25519 signature over the raw receipt hash. Every
// check is reported; the error lists those that failed.
func verifyArtifacts(a demoArtifacts, want demoClaims) (verifyReport, error) {
	var rep verifyReport
	// eq checks that got equals every non-empty value of the (source, value)
	// pairs in wants.
	eq := func(name, got string, wants ...string) {
		for i := 0; i+1 < len(wants); i += 2 {
			if w := wants[i+1]; w != "" && w != got {
				rep.fail(name, "%s, but %s says %s", got, wants[i], w)
				return
			}
		}
		rep.pass(name, "%s", got)
	}

	f, qrErr := qr.Parse(a.QRPayload)
	if qrErr != nil {
		rep.fail("qr payload", "%v", qrErr)
	} else {
		rep.pass("qr payload", "BPC-QR-1, %d bytes", len(a.QRPayload))
	}
	r, rErr := receipt.Parse(a.Receipt)
	if rErr == nil && r.Signature == "" {
		rErr = errors.New("the receipt is not signed")
	}
	var rh string
	var rhRaw [32]byte
	if rErr == nil {
		rh, rhRaw, rErr = receipt.Hash(r)
	}
	if rErr != nil {
		rep.fail("receipt", "%s: %v", fileReceipt, rErr)
	} else {
		rep.pass("receipt", "%s, signed, key %s", receipt.Version, r.SigningKeyID)
	}
	p, pErr := proof.Verify(a.Proof)
	if pErr != nil {
		rep.fail("proof", "%s: %v", fileProof, pErr)
	} else {
		rep.pass("proof", "%s, %d nodes, every node hash recomputed", p.ProofVersion, len(p.Nodes))
	}

	// pv
	if qrErr == nil && rErr == nil {
		eq("pv = version", f.PassportVersionID, "the API", want.PassportVersionID, "the receipt", r.PassportVersionID)
	}
	// ph
	ph := hash.SHA256Hex(a.Payload)
	if qrErr == nil && rErr == nil {
		eq("ph = sha256(payload)", ph, "the QR payload", f.PayloadHash, "the receipt", r.PayloadHash, "the API", want.PayloadHash)
	}
	// pr
	if qrErr == nil && rErr == nil && pErr == nil {
		eq("pr = proof root", p.RootHash, "the QR payload", f.ProofRootHash, "the receipt", r.ProofRootHash, "the API", want.ProofRootHash)
	}
	// rh
	if qrErr == nil && rErr == nil {
		switch {
		case !bytes.Equal(a.ReceiptHash, rhRaw[:]):
			rep.fail("rh = receipt hash", "%s does not hold the 32 bytes of the recomputed receipt hash %s", fileReceiptHash, rh)
		default:
			eq("rh = receipt hash", rh, "the QR payload", f.ReceiptHash, "the API", want.ReceiptHash)
		}
	}

	// The key: signing-key.json, public-key.pem, the receipt and the API agree.
	pub, keyErr := checkKeyFiles(a, want)
	if keyErr == nil && rErr == nil && r.SigningKeyID != keyIDOf(a.SigningKey) {
		keyErr = fmt.Errorf("the receipt names key %q, %s holds %q", r.SigningKeyID, fileSigningKey, keyIDOf(a.SigningKey))
	}
	if keyErr != nil {
		rep.fail("signing key", "%v", keyErr)
	} else {
		rep.pass("signing key", "%s, Ed25519, %s = %s", keyIDOf(a.SigningKey), filePublicKeyPEM, fileSigningKey)
	}

	// The signature: the receipt's, signature.bin and the API's agree, and it
	// verifies over the 32 raw receipt hash bytes.
	if rErr == nil && keyErr == nil {
		sig, err := base64.StdEncoding.Strict().DecodeString(r.Signature)
		switch {
		case err != nil || len(sig) != ed25519.SignatureSize:
			rep.fail("signature", "the receipt's signature is not base64 of %d bytes", ed25519.SignatureSize)
		case !bytes.Equal(sig, a.Signature):
			rep.fail("signature", "%s differs from the receipt's signature", fileSignature)
		case want.Signature != "" && want.Signature != r.Signature:
			rep.fail("signature", "the API's signature differs from the receipt's")
		case !ed25519.Verify(pub, rhRaw[:], sig):
			rep.fail("signature", "Ed25519 signature does NOT verify over the receipt hash")
		default:
			rep.pass("signature", "Ed25519 over the 32 raw bytes of rh verifies")
		}
	}

	// qr.png is the deterministic rendering of the payload.
	if qrErr == nil {
		png, err := qr.PNG(a.QRPayload)
		switch {
		case err != nil:
			rep.fail("qr.png", "%v", err)
		case !bytes.Equal(png, a.QRPNG):
			rep.fail("qr.png", "%s is not the BPC-QR-1 rendering of the payload (%d bytes, want %d)", fileQRPNG, len(a.QRPNG), len(png))
		default:
			rep.pass("qr.png", "byte-identical to the local rendering of the payload")
		}
	}
	return rep, rep.err()
}

func keyIDOf(signingKeyJSON []byte) string {
	var k signingKeyFile
	_ = json.Unmarshal(signingKeyJSON, &k)
	return k.KeyID
}

// checkKeyFiles decodes signing-key.json and public-key.pem and checks that
// they hold the same Ed25519 key, which is the API's when it gave one.
func checkKeyFiles(a demoArtifacts, want demoClaims) (ed25519.PublicKey, error) {
	var k signingKeyFile
	dec := json.NewDecoder(bytes.NewReader(a.SigningKey))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&k); err != nil {
		return nil, fmt.Errorf("%s: %v", fileSigningKey, err)
	}
	if k.KeyID == "" {
		return nil, fmt.Errorf("%s has no key_id", fileSigningKey)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(k.PublicKeyBase64)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%s: public_key_base64 is not base64 of %d bytes", fileSigningKey, ed25519.PublicKeySize)
	}
	pub := ed25519.PublicKey(raw)
	block, rest := pem.Decode(a.PublicKey)
	if block == nil || block.Type != "PUBLIC KEY" || len(bytes.TrimSpace(rest)) > 0 {
		return nil, fmt.Errorf("%s is not a single PUBLIC KEY PEM block", filePublicKeyPEM)
	}
	parsed, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", filePublicKeyPEM, err)
	}
	pemKey, ok := parsed.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%s holds a %T, not an Ed25519 key", filePublicKeyPEM, parsed)
	}
	if !pub.Equal(pemKey) {
		return nil, fmt.Errorf("%s and %s hold different keys", filePublicKeyPEM, fileSigningKey)
	}
	if want.SigningKeyID != "" && want.SigningKeyID != k.KeyID {
		return nil, fmt.Errorf("the API names key %q, %s holds %q", want.SigningKeyID, fileSigningKey, k.KeyID)
	}
	if want.PublicKey != nil && !pub.Equal(want.PublicKey) {
		return nil, fmt.Errorf("%s differs from the API's public key", fileSigningKey)
	}
	return pub, nil
}
