package e2e

// The hostile suite: what an attacker holding a valid token (or none) would
// send, replayed against one real `bpc serve` process. Throughout, the process
// must stay up and /v1/health/ready must answer 200; each request must get
// its 4xx or a bounded outcome; afterwards `bpc doctor` must find no drift and
// the log must hold no secret. Every case here was once a way to crash,
// hang or see inside the service.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// hostileSecret is a webhook secret the log must never show.
const hostileSecret = "whsec-hostile-never-logged-0123456789"

// hostileDBPassword is the database password the log must never show.
const hostileDBPassword = "pg-password-never-logged-7d1f"

// hostile is the suite's world: the process, a second tenant, and the
// readiness watcher's findings.
type hostile struct {
	*serviceProc
	other    uuid.UUID // a second tenant
	notReady atomic.Int64
	firstBad atomic.Value // string: the first non-200 readiness answer
}

func TestHostile(t *testing.T) {
	t.Parallel()
	// The database password is a sentinel the log must never show (the test
	// Postgres trusts, so any password connects).
	_, schemaURL := testdb.EmptySchema(t)
	u, err := url.Parse(schemaURL)
	require.NoError(t, err)
	u.User = url.UserPassword(u.User.Username(), hostileDBPassword)
	svc := startServiceAt(t, service.RoleAll, u.String(), map[string]string{
		"BPC_WEBHOOK_ALLOW_PRIVATE":   "false",
		"BPC_JOBS_MAX_LEASE_EXPIRIES": "2",
		"BPC_JOBS_BACKOFF_UNIT_MS":    "50",
		"BPC_WORKER_CONCURRENCY":      "4",
	})
	h := &hostile{serviceProc: svc}
	var tenant bpctype.Tenant
	require.Equal(t, http.StatusCreated, h.admin(http.MethodPost, "/v1/tenants", map[string]any{"slug": "rival", "name": "Rival Cells"}, &tenant))
	h.other = tenant.TenantID

	stop := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() { h.watchReadiness(stop) })

	cases := []struct {
		name string
		run  func(t *testing.T, h *hostile)
	}{
		{"rules_operator_chains", hostileRuleChains},
		{"rules_largest_admitted_program_runs", hostileLargestProgram},
		{"rules_case_budget", hostileCaseBudget},
		{"rules_test_run_cancel", hostileTestRunCancel},
		{"webhook_destinations", hostileWebhookDestinations},
		{"webhook_dial_time_denial", hostileDialTimeDenial},
		{"riverui_cross_site", hostileRiverUICrossSite},
		{"security_headers", hostileSecurityHeaders},
		{"metric_labels_bounded", hostileMetricLabels},
		{"text_nul_and_invalid_utf8", hostileText},
		{"deep_json", hostileDeepJSON},
		{"foreign_ids", hostileForeignIDs},
		{"health_head_and_allow", hostileHealthAndAllow},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.t = t
			c.run(t, h)
			h.requireAlive()
		})
	}
	h.t = t
	close(stop)
	watcher.Wait()
	h.requireAlive()
	require.Zero(t, h.notReady.Load(), "readiness was not 200 %d times; first: %v", h.notReady.Load(), h.firstBad.Load())

	rep := h.doctor()
	require.True(t, rep.OK, "bpc doctor after the hostile suite: %+v", rep)

	logs, err := os.ReadFile(h.stdout)
	require.NoError(t, err)
	stderr, err := os.ReadFile(h.stderr)
	require.NoError(t, err)
	for _, secret := range []string{testToken, hostileSecret, hostileDBPassword} {
		require.NotContains(t, string(logs), secret, "the log holds a secret")
		require.NotContains(t, string(stderr), secret, "stderr holds a secret")
	}
}

// watchReadiness asks /v1/health/ready every 100 ms until stop, counting
// every answer that is not 200 (a dead process counts too).
func (h *hostile) watchReadiness(stop chan struct{}) {
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := client.Get(h.base + "/v1/health/ready")
		bad := ""
		switch {
		case err != nil:
			bad = err.Error()
		case resp.StatusCode != http.StatusOK:
			bad = resp.Status
		}
		if resp != nil {
			resp.Body.Close()
		}
		if bad != "" {
			h.notReady.Add(1)
			h.firstBad.CompareAndSwap(nil, time.Now().Format(time.RFC3339Nano)+" "+bad)
		}
	}
}

// envelope is the error answer of every 4xx/5xx.
// expectError sends a request with the platform token and requires status and
// code; it returns the envelope.
func (h *hostile) expectError(method, path string, body any, status int, code string) errorEnvelope {
	h.t.Helper()
	var env errorEnvelope
	got := h.admin(method, path, body, &env)
	require.Equal(h.t, status, got, "%s %s: %+v", method, path, env)
	require.Equal(h.t, code, env.Error.Code, "%s %s: %+v", method, path, env)
	return env
}

// rulePackage creates a rule package in the dev tenant and returns its id.
func (h *hostile) rulePackage() uuid.UUID {
	h.t.Helper()
	var p bpctype.RulePackage
	require.Equal(h.t, http.StatusCreated, h.admin(http.MethodPost, "/v1/rule-packages",
		map[string]any{"tenant_id": devTenant, "name": "hostile-" + uuid.NewString()[:8]}, &p))
	return p.RulePackageID
}

// ruleVersion posts a version; it returns the status, the version (on 201) and
// the envelope (otherwise).
func (h *hostile) ruleVersion(pkg uuid.UUID, dsl, tests string) (int, bpctype.RulePackageVersion, errorEnvelope) {
	h.t.Helper()
	body := map[string]any{"tenant_id": devTenant, "dsl_source": dsl, "tests_source": tests}
	status, _, raw := h.do(http.MethodPost, "/v1/rule-packages/"+pkg.String()+"/versions", body,
		map[string]string{"Authorization": "Bearer " + testToken})
	var v bpctype.RulePackageVersion
	var env errorEnvelope
	if status == http.StatusCreated {
		require.NoError(h.t, json.Unmarshal(raw, &v))
	} else {
		require.NoError(h.t, json.Unmarshal(raw, &env), "%d %s", status, raw)
	}
	return status, v, env
}

// runTests enqueues RUN_RULE_TESTS for a version and returns its job.
func (h *hostile) runTests(version uuid.UUID) bpctype.Job {
	h.t.Helper()
	var resp struct {
		Job bpctype.Job `json:"job"`
	}
	require.Equal(h.t, http.StatusAccepted, h.admin(http.MethodPost, "/v1/rule-package-versions/"+version.String()+"/test",
		map[string]any{"tenant_id": devTenant}, &resp))
	return resp.Job
}

// waitJob long-polls a job until it is terminal (or the wait ends).
func (h *hostile) waitJob(id uuid.UUID, wait time.Duration) bpctype.Job {
	h.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		var job bpctype.Job
		status := h.admin(http.MethodGet, fmt.Sprintf("/v1/jobs/%s?tenant_id=%s&waitMs=%d", id, devTenant, min(wait, 10*time.Second).Milliseconds()), nil, &job)
		require.Contains(h.t, []int{http.StatusOK, http.StatusAccepted}, status)
		if bpctype.IsTerminal(job.Status) || time.Now().After(deadline) {
			return job
		}
	}
}

const okTests = "example e: { } => expect(a, ==, 1);\n"

// Operator chains, unary chains and nesting beyond the limits are refused at
// creation with RULE_PARSE_ERROR and a position — in milliseconds, not a
// stack overflow. Each source is just under the 1 MiB source limit.
func hostileRuleChains(t *testing.T, h *hostile) {
	pkg := h.rulePackage()
	const size = 1<<20 - 64
	repeat := func(prefix, unit, suffix string) string {
		n := (size - len(prefix) - len(suffix)) / len(unit)
		return prefix + strings.Repeat(unit, n) + suffix
	}
	for name, src := range map[string]string{
		"plus chain":   repeat("field a : Int = ", "1+", "1;"),
		"times chain":  repeat("field a : Int = ", "1*", "1;"),
		"and chain":    repeat("field a : Bool = ", "true&&", "true;"),
		"or chain":     repeat("field a : Bool = ", "true||", "true;"),
		"compare":      repeat("field a : Bool = ", "1<", "1;"),
		"unary not":    repeat("field a : Bool = ", "!", "true;"),
		"unary minus":  repeat("field a : Int = ", "- ", "1;"),
		"parens":       "field a : Int = " + strings.Repeat("(", 300_000) + "1" + strings.Repeat(")", 300_000) + ";",
		"nested lets":  repeat("field a : Int = ", "let x = 1; ", "x;"),
		"nested ifs":   repeat("field a : Int = ", "if (true) then 1 else ", "1;"),
		"nested calls": "field a : Int = " + strings.Repeat("unwrapOr(", 60_000) + "1" + strings.Repeat(", 1)", 60_000) + ";",
		"nested types": "field a : " + strings.Repeat("Opt(", 100_000) + "Int" + strings.Repeat(")", 100_000) + " = none;",
		"nested tests": "field a : Int = 1;",
	} {
		tests := okTests
		if name == "nested tests" {
			tests = "example e: { fact f(\"T\", \"k\") = " + strings.Repeat("[", 400_000) + strings.Repeat("]", 400_000) + "; } => expect(a, ==, 1);"
		}
		status, _, env := h.ruleVersion(pkg, src, tests)
		require.Equal(t, http.StatusUnprocessableEntity, status, "%s: %+v", name, env)
		require.Equal(t, "RULE_PARSE_ERROR", env.Error.Code, "%s: %+v", name, env)
		require.NotNil(t, env.Error.Details["line"], "%s: a position: %+v", name, env)
		require.NotNil(t, env.Error.Details["col"], "%s: a position: %+v", name, env)
	}
}

// The largest program the parser admits — nesting at the depth limit, and a
// wide program near the node budget — is accepted, and its test run ends
// (it has too few cases to pass) without crashing anything.
func hostileLargestProgram(t *testing.T, h *hostile) {
	pkg := h.rulePackage()
	var b strings.Builder
	b.WriteString("field deep : Int = " + strings.Repeat("(", 190) + "1" + strings.Repeat(")", 190) + ";\n")
	b.WriteString("field chain : Int = " + strings.Repeat("1+", 150) + "1;\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "field w%d : Int = %s1;\n", i, strings.Repeat("1+", 90))
	}
	status, v, env := h.ruleVersion(pkg, b.String(), "example e: { } => expect(deep, ==, 1);\n")
	require.Equal(t, http.StatusCreated, status, "%+v", env)
	job := h.waitJob(h.runTests(v.RulePackageVersionID).JobID, 60*time.Second)
	require.True(t, bpctype.IsTerminal(job.Status), "the run ends: %+v", job)
	require.NotEqual(t, bpctype.StatusDeadLetter, job.Status, "%+v", job)
}

// A tests source asking for more generated cases in total than
// BPC_RULES_MAX_CASES is refused before anything runs.
func hostileCaseBudget(t *testing.T, h *hostile) {
	pkg := h.rulePackage()
	var tests strings.Builder
	for i := range 80 {
		fmt.Fprintf(&tests, "property p%d: cases(1000000) seed(%d) => forall x: Int. implies(true, x == x);\n", i, i)
	}
	status, v, env := h.ruleVersion(pkg, "field a : Int = 1;", tests.String())
	if status == http.StatusUnprocessableEntity {
		require.Contains(t, env.Error.Message, "1000000", "the refusal names the limit: %+v", env)
		return
	}
	require.Equal(t, http.StatusCreated, status, "%+v", env)
	// Running them would take hours: FAILED with the limit's message, on
	// the first attempt, is the refusal before running.
	job := h.waitJob(h.runTests(v.RulePackageVersionID).JobID, 30*time.Second)
	require.Equal(t, bpctype.StatusFailed, job.Status, "%+v", job)
	require.EqualValues(t, 1, job.Attempts)
	require.Contains(t, lastError(t, job).Message, "1000000", "the failure names the limit: %s", job.LastError)
}

// A long test run (within the budget, minutes of work) stops at an
// operator's cancel instead of running on.
func hostileTestRunCancel(t *testing.T, h *hostile) {
	pkg := h.rulePackage()
	var dsl strings.Builder
	for i := range 40 {
		fmt.Fprintf(&dsl, "field f%d : Int = %s1;\n", i, strings.Repeat("1+", 50))
	}
	tests := "property slow: cases(1000000) seed(1) => forall x: Dec(2). implies(x > 0.00, x + x + x + x + x + x + x + x > x);\n"
	status, v, env := h.ruleVersion(pkg, dsl.String(), tests)
	require.Equal(t, http.StatusCreated, status, "%+v", env)
	job := h.runTests(v.RulePackageVersionID)
	deadline := time.Now().Add(20 * time.Second)
	for h.jobStatus(job.JobID) != bpctype.StatusRunning {
		require.True(t, time.Now().Before(deadline), "the run never started")
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, bpctype.StatusRunning, h.jobStatus(job.JobID), "the run is long enough to cancel")
	require.Equal(t, http.StatusOK, h.admin(http.MethodPost, "/v1/jobs/"+job.JobID.String()+"/cancel?tenant_id="+devTenant, nil, nil))
	deadline = time.Now().Add(30 * time.Second) // a wait: the run would go on for minutes
	for h.jobStatus(job.JobID) == bpctype.StatusRunning {
		require.True(t, time.Now().Before(deadline), "still RUNNING after the cancel")
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, bpctype.StatusCancelled, h.jobStatus(job.JobID))
}

func (h *hostile) jobStatus(id uuid.UUID) string {
	h.t.Helper()
	var job bpctype.Job
	require.Equal(h.t, http.StatusOK, h.admin(http.MethodGet, "/v1/jobs/"+id.String()+"?tenant_id="+devTenant, nil, &job))
	return job.Status
}

// Webhook URLs that point inside — loopback, private, link-local (cloud
// metadata), CGNAT, unspecified, IPv6 ULA, and the numeric spellings of
// 127.0.0.1 — are refused at registration, naming url.
func hostileWebhookDestinations(t *testing.T, h *hostile) {
	for _, u := range []string{
		"http://127.0.0.1:5432/", "http://localhost/hook", "http://169.254.169.254/latest/meta-data/",
		"http://10.0.0.1/", "http://172.16.5.4/", "http://192.168.1.1/", "http://100.64.0.1/",
		"http://0.0.0.0/", "http://[::1]/", "http://[fd00:ec2::254]/", "http://[fe80::1]/",
		"http://[::ffff:127.0.0.1]/", "http://0x7f000001/", "http://2130706433/", "http://0177.0.0.1/",
		"http://127.1/", "http://224.0.0.1/", "http://255.255.255.255/",
	} {
		env := h.expectError(http.MethodPost, "/v1/webhook-endpoints",
			map[string]any{"tenant_id": devTenant, "url": u, "secret": hostileSecret}, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
		require.Equal(t, "url", env.Error.Details["field"], u)
	}
}

// An endpoint whose address turns internal after registration (DNS changed,
// or stored before the policy) is refused at dial time: the delivery FAILS
// with WEBHOOK_DESTINATION_DENIED, nothing reaches the address, and the
// delivery shows no response from it.
func hostileDialTimeDenial(t *testing.T, h *hostile) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var hits atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("X-Internal", "secret-topology")
		_, _ = w.Write([]byte("internal service body"))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	pool := h.dbPool()
	epID := uuid.New()
	_, err = pool.Exec(t.Context(), `INSERT INTO webhook_endpoints (webhook_endpoint_id, tenant_id, url, secret)
		VALUES ($1, $2, $3, $4)`, epID, store.DevTenantID, "http://"+ln.Addr().String()+"/hook", hostileSecret)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, h.admin(http.MethodPost, "/v1/webhook-subscriptions",
		map[string]any{"tenant_id": devTenant, "webhook_endpoint_id": epID, "event_type": "hostile.rebind"}, nil))
	var ev struct {
		Deliveries []bpctype.DeliveryRef `json:"deliveries"`
	}
	require.Equal(t, http.StatusCreated, h.admin(http.MethodPost, "/v1/events", map[string]any{"tenant_id": devTenant,
		"aggregate_type": "Passport", "aggregate_id": uuid.New(), "event_type": "hostile.rebind", "payload": map[string]any{}}, &ev))
	require.Len(t, ev.Deliveries, 1)
	job := h.waitJob(ev.Deliveries[0].JobID, 30*time.Second)
	require.Equal(t, bpctype.StatusFailed, job.Status, "%+v", job)
	require.Equal(t, "WEBHOOK_DESTINATION_DENIED", lastError(t, job).Code)
	require.Zero(t, hits.Load(), "nothing was sent")
	status, _, raw := h.do(http.MethodGet, "/v1/webhook-deliveries/"+ev.Deliveries[0].WebhookDeliveryID.String()+"?tenant_id="+devTenant, nil,
		map[string]string{"Authorization": "Bearer " + testToken})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(raw), "WEBHOOK_DESTINATION_DENIED")
	require.NotContains(t, string(raw), "internal service body")
	require.NotContains(t, string(raw), "secret-topology")
}

// River UI's state-changing API refuses a cross-site request (the browser
// would send the cached Basic credentials) and the job stays as it was; a
// same-origin one works.
func hostileRiverUICrossSite(t *testing.T, h *hostile) {
	var job bpctype.Job
	require.Equal(t, http.StatusCreated, h.admin(http.MethodPost, "/v1/jobs", map[string]any{
		"type": jobargs.KindBuildSnapshot, "tenant_id": devTenant, "payload": map[string]any{"snapshot_id": h.snapshot()},
		"scheduled_at": time.Now().Add(time.Hour)}, &job))
	body := fmt.Sprintf(`{"ids":["%d"]}`, job.RiverJobID)
	auth := basicAuth("ops", testToken)
	for name, headers := range map[string]map[string]string{
		"origin":         {"Authorization": auth, "Content-Type": "text/plain", "Origin": "https://evil.example"},
		"sec-fetch-site": {"Authorization": auth, "Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site"},
		"json origin":    {"Authorization": auth, "Content-Type": "application/json", "Origin": "https://evil.example"},
	} {
		status, _, raw := h.do(http.MethodPost, "/riverui/api/jobs/cancel", body, headers)
		require.Equal(t, http.StatusForbidden, status, "%s: %s", name, raw)
	}
	require.Equal(t, bpctype.StatusQueued, h.jobStatus(job.JobID), "the cross-site cancels did nothing")
	status, _, raw := h.do(http.MethodPost, "/riverui/api/jobs/cancel", body,
		map[string]string{"Authorization": auth, "Content-Type": "application/json", "Origin": h.base, "Sec-Fetch-Site": "same-origin"})
	require.Equal(t, http.StatusOK, status, "%s", raw)
	require.Equal(t, bpctype.StatusCancelled, h.jobStatus(job.JobID))
}

func (h *hostile) snapshot() uuid.UUID {
	h.t.Helper()
	var sn struct {
		SnapshotID uuid.UUID `json:"snapshot_id"`
	}
	require.Equal(h.t, http.StatusCreated, h.admin(http.MethodPost, "/v1/snapshots", map[string]any{"tenant_id": devTenant}, &sn))
	return sn.SnapshotID
}

// Every response — River UI's page, JSON, errors — forbids framing and
// sniffing.
func hostileSecurityHeaders(t *testing.T, h *hostile) {
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	for _, r := range []struct {
		path    string
		headers map[string]string
	}{
		{"/riverui/", map[string]string{"Authorization": basicAuth("ops", testToken)}},
		{"/v1/health/live", nil},
		{"/v1/jobs?tenant_id=" + devTenant, auth},
		{"/v1/jobs/not-a-uuid", auth},
		{"/v1/no-such-route", auth},
		{"/v1/jobs", nil}, // 401
	} {
		_, hdr, _ := h.do(http.MethodGet, r.path, nil, r.headers)
		require.Equal(t, "nosniff", hdr.Get("X-Content-Type-Options"), r.path)
		frame := hdr.Get("X-Frame-Options") == "DENY" || strings.Contains(hdr.Get("Content-Security-Policy"), "frame-ancestors 'none'")
		require.True(t, frame, "%s: framing is not forbidden (%v)", r.path, hdr)
	}
}

// Made-up methods and paths, unauthenticated, do not add metric series.
func hostileMetricLabels(t *testing.T, h *hostile) {
	series := func() int {
		_, _, raw := h.do(http.MethodGet, "/v1/metrics", nil, map[string]string{"Authorization": "Bearer " + testToken})
		return httpSeries(raw)
	}
	// One of each method on a few routes first, so the legitimate series exist.
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
		h.do(m, "/v1/health/live", nil, nil)
		h.do(m, "/nope", nil, nil)
	}
	h.do("BREW", "/nope", nil, nil)
	before := series()
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		method := fmt.Sprintf("M%08X", rnd.Uint32())
		h.do(method, fmt.Sprintf("/x/%d/%08x", i, rnd.Uint32()), nil, nil)
	}
	after := series()
	require.LessOrEqual(t, after, before+40, "500 made-up requests added %d metric lines", after-before)
}

// NUL and invalid UTF-8 in text are a 422 naming the field, never a 500.
func hostileText(t *testing.T, h *hostile) {
	env := h.expectError(http.MethodPost, "/v1/tenants", map[string]any{"slug": "nul\x00slug", "name": "x"}, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	require.Equal(t, "slug", env.Error.Details["field"])
	env = h.expectError(http.MethodPost, "/v1/rule-packages", map[string]any{"tenant_id": devTenant, "name": "a\x00b"}, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	require.Equal(t, "name", env.Error.Details["field"])
	env = h.expectError(http.MethodPost, "/v1/events", map[string]any{"tenant_id": devTenant, "aggregate_type": "Passport",
		"aggregate_id": uuid.New(), "event_type": "nul.test", "payload": map[string]any{"note": "a\x00b"}}, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	require.Equal(t, "payload.note", env.Error.Details["field"])
	env = h.expectError(http.MethodPost, "/v1/webhook-endpoints", map[string]any{"tenant_id": devTenant,
		"url": "https://example.com/hook", "secret": "secret\x00secret-0123456789"}, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
	require.Equal(t, "secret", env.Error.Details["field"])

	raw := []byte(`{"slug":"bad-` + "\xff\xfe" + `","name":"x"}`)
	status, _, body := h.do(http.MethodPost, "/v1/tenants", raw, map[string]string{"Authorization": "Bearer " + testToken})
	require.Equal(t, http.StatusUnprocessableEntity, status, "%s", body)
	require.Contains(t, string(body), `"field":"slug"`)

	status, _, body = h.do(http.MethodGet, "/v1/jobs?tenant_id="+devTenant+"&type=%00", nil, map[string]string{"Authorization": "Bearer " + testToken})
	require.Equal(t, http.StatusUnprocessableEntity, status, "%s", body)
}

// Deeply nested JSON in bodies and in payloads that are stored or hashed
// ends as a 4xx, never a crash.
func hostileDeepJSON(t *testing.T, h *hostile) {
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	deep := strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000)
	for _, path := range []string{"/v1/events", "/v1/jobs", "/v1/tenants"} {
		status, _, body := h.do(http.MethodPost, path, `{"tenant_id":"`+devTenant+`","payload":`+deep+`}`, auth)
		require.GreaterOrEqual(t, status, 400, "%s: %s", path, body)
		require.Less(t, status, 500, "%s: %s", path, body)
	}
	// Nesting Go's decoder accepts but a recursive encoder or Postgres may not.
	mid := strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000)
	status, _, body := h.do(http.MethodPost, "/v1/events", `{"tenant_id":"`+devTenant+`","aggregate_type":"Passport","aggregate_id":"`+
		uuid.NewString()+`","event_type":"deep.test","payload":`+mid+`}`, auth)
	require.Less(t, status, 500, "%s", body)
	// A document whose content nests deeply is parsed (rejected) by a job
	// that ends, not one that crashes its worker.
	var doc struct {
		DocumentID uuid.UUID `json:"document_id"`
	}
	require.Equal(t, http.StatusCreated, h.admin(http.MethodPost, "/v1/documents", map[string]any{"tenant_id": devTenant, "kind": "BOM", "name": "deep"}, &doc))
	status, _, body = h.do(http.MethodPost, "/v1/documents/"+doc.DocumentID.String()+"/versions",
		map[string]any{"tenant_id": devTenant, "mime_type": "application/json", "content": base64.StdEncoding.EncodeToString([]byte(mid))}, auth)
	require.Less(t, status, 500, "%s", body)
	if status == http.StatusAccepted || status == http.StatusCreated {
		var resp struct {
			Job *bpctype.Job `json:"job"`
		}
		require.NoError(t, json.Unmarshal(body, &resp))
		if resp.Job != nil {
			job := h.waitJob(resp.Job.JobID, 30*time.Second)
			require.True(t, bpctype.IsTerminal(job.Status), "%+v", job)
		}
	}
}

// Ids of another tenant are unknown: 404 at the API, nothing enqueued.
func hostileForeignIDs(t *testing.T, h *hostile) {
	mine := h.snapshot()
	other := h.other.String()
	env := h.expectError(http.MethodPost, "/v1/jobs", map[string]any{"type": jobargs.KindBuildSnapshot, "tenant_id": other,
		"payload": map[string]any{"snapshot_id": mine}}, http.StatusNotFound, "NOT_FOUND")
	require.Equal(t, "payload.snapshot_id", env.Error.Details["field"])
	h.expectError(http.MethodGet, "/v1/snapshots/"+mine.String()+"?tenant_id="+other, nil, http.StatusNotFound, "NOT_FOUND")
	h.expectError(http.MethodPost, "/v1/snapshots/"+mine.String()+"/build", map[string]any{"tenant_id": other}, http.StatusNotFound, "NOT_FOUND")
	var page store.JobPage
	require.Equal(t, http.StatusOK, h.admin(http.MethodGet, "/v1/jobs?tenant_id="+other, nil, &page))
	require.Empty(t, page.Items, "nothing was enqueued for the other tenant")
}

// Load balancers probe with HEAD; a 405 says what is allowed.
func hostileHealthAndAllow(t *testing.T, h *hostile) {
	for _, path := range []string{"/v1/health/live", "/v1/health/ready"} {
		status, _, body := h.do(http.MethodHead, path, nil, nil)
		require.Equal(t, http.StatusOK, status, path)
		require.Empty(t, body)
	}
	status, hdr, body := h.do(http.MethodDelete, "/v1/health/live", nil, nil)
	require.Equal(t, http.StatusMethodNotAllowed, status, "%s", body)
	require.Contains(t, hdr.Get("Allow"), "GET")
	require.Contains(t, string(body), `"code"`)
}
