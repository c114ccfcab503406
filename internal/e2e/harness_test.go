package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/contract"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

const (
	testToken   = "test-admin-token-0123456789"
	testTimeout = 20 * time.Second
	pollEvery   = 10 * time.Millisecond
)

var devTenant = store.DevTenantID.String()

// harness runs the whole service (River workers, admin API, River UI) on a
// loopback port over its own schema.
type harness struct {
	t    *testing.T
	app  *service.App
	pool *pgxpool.Pool
	base string
	logs *syncBuffer // the service's JSON log, shown when a test fails
	// tenant is the tenant the platform token acts for in the pipeline
	// helpers (post, get, job, waitJob); empty: the dev tenant.
	tenant string
}

// forTenant returns the harness acting for tenant (as the platform, naming
// it) in the pipeline helpers.
func (h *harness) forTenant(tenant string) *harness {
	c := *h
	c.tenant = tenant
	return &c
}

// actingTenant is the tenant the pipeline helpers act for.
func (h *harness) actingTenant() string {
	if h.tenant != "" {
		return h.tenant
	}
	return devTenant
}

func newHarness(t *testing.T, role string, env map[string]string) *harness {
	t.Helper()
	return newHarnessWith(t, role, env, nil)
}

// testConfig is the configuration of a service under test: the test
// database and token, quick polls and backoff, a short shutdown and a worker
// id of its own (prefix and a random part), with vars and then env set
// over them.
func testConfig(t *testing.T, workerPrefix string, vars, env map[string]string) service.Config {
	t.Helper()
	all := map[string]string{
		"DATABASE_URL":                   testdb.URL(),
		"BPC_ENV":                        "test",
		"BPC_ADMIN_TOKEN":                testToken,
		"BPC_WORKER_ID":                  workerPrefix + uuid.NewString()[:8],
		"BPC_JOBS_POLL_INTERVAL_MS":      "20",
		"BPC_JOBS_BACKOFF_UNIT_MS":       "25",
		"BPC_WORKER_SHUTDOWN_TIMEOUT_MS": "3000",
	}
	maps.Copy(all, vars)
	maps.Copy(all, env)
	cfg, err := service.LoadConfig(func(k string) string { return all[k] })
	require.NoError(t, err)
	return cfg
}

// newHarnessWith is newHarness with a last say on the configuration (test
// hooks that the environment cannot set).
func newHarnessWith(t *testing.T, role string, env map[string]string, mutate func(*service.Config)) *harness {
	t.Helper()
	pool := testdb.New(t)
	cfg := testConfig(t, "test-worker-", map[string]string{
		"BPC_HTTP_ADDR":          "127.0.0.1:0",
		"BPC_WEBHOOK_TIMEOUT_MS": "5000",
		// A short breaker cool-down: tests that dead-letter an endpoint
		// then fix it should not wait the default 30 s for the probe.
		"BPC_WEBHOOK_BREAKER_COOLDOWN_MS": "300",
		// No maintenance jobs unless a test asks: tests count jobs.
		"BPC_MAINTENANCE_CONSISTENCY_INTERVAL_MS": "0",
		"BPC_MAINTENANCE_RETENTION_INTERVAL_MS":   "0",
	}, env)
	if mutate != nil {
		mutate(&cfg)
	}
	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service log:\n%s", logs.String())
		}
	})
	// The service's own logger (JSON, redacting), so that tests see what
	// an operator's log would hold.
	logger := service.NewLogger(cfg, logs)
	a, err := service.New(cfg, role, logger, pool)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, a.Start(ctx))
	t.Cleanup(func() {
		a.Stop(context.Background())
		cancel()
	})
	h := &harness{t: t, app: a, pool: pool, base: "http://" + a.Addr(), logs: logs}
	checkContract(t, a.Addr(), h.base)
	return h
}

// contracts maps the address of each running harness to the validator of
// its OpenAPI document: every response a test receives from it through
// http.DefaultClient (or a serviceProc's client) is checked against
// the document the service serves (internal/contract).
var contracts sync.Map // host:port -> *contract.Validator

func init() {
	http.DefaultClient.Transport = contractTransport{next: http.DefaultTransport}
}

// checkContract validates the responses of the service at addr for the
// rest of the test.
func checkContract(t *testing.T, addr, base string) {
	v := contract.Fetch(t, &http.Client{Timeout: testTimeout}, base).Ignore("/riverui")
	contracts.Store(addr, v)
	t.Cleanup(func() { contracts.Delete(addr) })
}

type contractTransport struct{ next http.RoundTripper }

func (c contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if v, ok := contracts.Load(req.URL.Host); ok {
		v.(*contract.Validator).CheckResponse(req, resp)
	}
	return resp, nil
}

// call sends a request with the admin token and decodes a JSON response into out.
func (h *harness) call(method, path string, body any, out any) int {
	h.t.Helper()
	status, raw := h.raw(method, path, body, map[string]string{"Authorization": "Bearer " + testToken})
	if out != nil && len(raw) > 0 {
		require.NoError(h.t, json.Unmarshal(raw, out), "response: %s", raw)
	}
	return status
}

// raw sends a request with exactly the given headers.
func (h *harness) raw(method, path string, body any, headers map[string]string) (int, []byte) {
	h.t.Helper()
	status, _, raw := send(h.t, http.DefaultClient, method, h.base+path, body, headers)
	return status, raw
}

// headers sends a request like raw and also returns the response headers.
func (h *harness) headers(method, path string, body any, headers map[string]string) (int, http.Header, []byte) {
	h.t.Helper()
	return send(h.t, http.DefaultClient, method, h.base+path, body, headers)
}

// send sends a request with exactly the given headers through client and
// returns the status, the response headers and the body. A string or
// []byte body is sent as it is, anything else but nil as JSON. A transport
// error fails the test.
func send(t *testing.T, client *http.Client, method, url string, body any, headers map[string]string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	require.NoError(t, err, "%s %s", method, url)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, raw
}

// riverUI posts to River UI's own JSON API with HTTP Basic auth.
func (h *harness) riverUI(action string, riverJobID int64) {
	h.t.Helper()
	status, raw := h.raw(http.MethodPost, "/riverui/api/jobs/"+action,
		map[string]any{"ids": []string{strconv.FormatInt(riverJobID, 10)}},
		map[string]string{"Authorization": basicAuth("operator", testToken), "Content-Type": "application/json"})
	require.Equal(h.t, http.StatusOK, status, "River UI %s: %s", action, raw)
}

func basicAuth(user, password string) string {
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(user, password)
	return req.Header.Get("Authorization")
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// job reads a job through the API.
func (h *harness) job(jobID uuid.UUID) bpctype.Job {
	h.t.Helper()
	var job bpctype.Job
	require.Equal(h.t, http.StatusOK, h.call(http.MethodGet, "/v1/jobs/"+jobID.String()+"?tenant_id="+h.actingTenant(), nil, &job))
	return job
}

// waitJob long-polls until the job is terminal.
func (h *harness) waitJob(jobID uuid.UUID) bpctype.Job {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var job bpctype.Job
		status := h.call(http.MethodGet, "/v1/jobs/"+jobID.String()+"?tenant_id="+h.actingTenant()+"&waitMs=10000", nil, &job)
		if status == http.StatusOK {
			return job
		}
		require.Equal(h.t, http.StatusAccepted, status)
		require.True(h.t, time.Now().Before(deadline), "job %s still %s", jobID, job.Status)
	}
}

// errorEnvelope is the API's error answer.
type errorEnvelope struct {
	Error struct {
		Code          string         `json:"code"`
		Message       string         `json:"message"`
		CorrelationID string         `json:"correlation_id"`
		Details       map[string]any `json:"details"`
	} `json:"error"`
}

// jobError is a job's last_error: the error of its last failed attempt.
type jobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Attempt int    `json:"attempt"`
	At      string `json:"at"`
}

// lastError decodes a job's last_error; a job without one fails the test.
func lastError(t *testing.T, job bpctype.Job) jobError {
	t.Helper()
	var e jobError
	require.NotEmpty(t, job.LastError, "job %s has no last_error", job.JobID)
	require.NoError(t, json.Unmarshal(job.LastError, &e))
	return e
}

// eventually polls cond until it holds.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	require.Eventually(h.t, cond, testTimeout, pollEvery, what)
}

// requireConsistent asserts the mirror has no drift.
func (h *harness) requireConsistent() {
	h.t.Helper()
	rep, err := store.New(h.pool).CheckConsistency(context.Background())
	require.NoError(h.t, err)
	require.True(h.t, rep.OK(), "mirror drift: %+v", rep.Drifts)
}

func (h *harness) deadLetters(kind string) float64 {
	return testutil.ToFloat64(h.app.Metrics().DeadLetter.WithLabelValues(kind))
}

// receiver is a webhook endpoint whose answer the test controls.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	status   int
	hold     chan struct{} // when set, requests wait for it to close
	requests []received
}

type received struct {
	at     time.Time
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.requests = append(r.requests, received{at: time.Now(), header: req.Header.Clone(), body: body})
		hold, status := r.hold, r.status
		r.mu.Unlock()
		if hold != nil {
			<-hold
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"ok":` + jsonString(status < 300) + `}`))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) set(status int, hold chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.hold = status, hold
}

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.requests...)
}

const testSecret = "whsec-0123456789abcdef"

// verifySignature is the receiver's recipe from the seed: HMAC-SHA256 of the
// raw body with the shared secret, compared in constant time with the
// header's hex after "sha256=".
func verifySignature(secret string, body []byte, header string) bool {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	expected := hex.EncodeToString(mac.Sum(nil))
	provided, ok := strings.CutPrefix(header, "sha256=")
	return ok && hmac.Equal([]byte(expected), []byte(provided))
}

// subscribe creates an endpoint for url subscribed to eventType.
func (h *harness) subscribe(url, eventType string) uuid.UUID {
	h.t.Helper()
	var ep struct {
		WebhookEndpointID uuid.UUID `json:"webhook_endpoint_id"`
	}
	require.Equal(h.t, http.StatusCreated, h.call(http.MethodPost, "/v1/webhook-endpoints",
		map[string]any{"tenant_id": devTenant, "url": url, "secret": testSecret}, &ep))
	require.Equal(h.t, http.StatusCreated, h.call(http.MethodPost, "/v1/webhook-subscriptions",
		map[string]any{"tenant_id": devTenant, "webhook_endpoint_id": ep.WebhookEndpointID, "event_type": eventType}, nil))
	return ep.WebhookEndpointID
}

type eventResponse struct {
	EventID    uuid.UUID             `json:"event_id"`
	EventHash  string                `json:"event_hash"`
	Deliveries []bpctype.DeliveryRef `json:"deliveries"`
}

// emit appends an event through the API.
func (h *harness) emit(eventType string, payload any) eventResponse {
	h.t.Helper()
	var ev eventResponse
	require.Equal(h.t, http.StatusCreated, h.call(http.MethodPost, "/v1/events", map[string]any{
		"tenant_id": devTenant, "aggregate_type": "Passport", "aggregate_id": uuid.NewString(),
		"event_type": eventType, "payload": payload,
	}, &ev))
	return ev
}

// deliverOne subscribes url to eventType, emits one such event (an empty
// payload) and waits for the job of its one delivery to end.
func (h *harness) deliverOne(url, eventType string) (eventResponse, bpctype.Job) {
	h.t.Helper()
	h.subscribe(url, eventType)
	ev := h.emit(eventType, map[string]any{})
	return ev, h.waitJob(ev.Deliveries[0].JobID)
}

// deliverLater enqueues DELIVER_WEBHOOK with payload over POST /v1/jobs,
// scheduled at `at`, and returns the job.
func (h *harness) deliverLater(payload map[string]any, at time.Time) bpctype.Job {
	h.t.Helper()
	var job bpctype.Job
	require.Equal(h.t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", map[string]any{
		"type": jobargs.KindDeliverWebhook, "tenant_id": devTenant, "payload": payload, "scheduled_at": at,
	}, &job))
	return job
}

func (h *harness) delivery(id uuid.UUID) bpctype.WebhookDelivery {
	h.t.Helper()
	var d bpctype.WebhookDelivery
	require.Equal(h.t, http.StatusOK, h.call(http.MethodGet, "/v1/webhook-deliveries/"+id.String()+"?tenant_id="+devTenant, nil, &d))
	return d
}

// transitions returns the statuses of the "job transition" log lines of a
// job, in order, each with its source when it has one.
func (h *harness) transitions(jobID uuid.UUID) []string {
	h.t.Helper()
	var out []string
	for _, line := range strings.Split(h.logs.String(), "\n") {
		var rec struct {
			Msg    string `json:"msg"`
			JobID  string `json:"job_id"`
			Status string `json:"status"`
			Source string `json:"source"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "job transition" || rec.JobID != jobID.String() {
			continue
		}
		if rec.Source != "" {
			rec.Status += "@" + rec.Source
		}
		out = append(out, rec.Status)
	}
	return out
}
