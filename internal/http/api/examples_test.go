package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/apiclient"
	"github.com/bpc-platform/bpc/internal/demo"
	"github.com/bpc-platform/bpc/internal/http/api"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

var updateExamples = flag.Bool("update", false, "rewrite "+api.ExamplesFile+" from the exchanges of TestExamplesFromAHappyPath")

const examplesToken = "examples-admin-token-0123456789"

// The committed examples are in the served document, each still matches
// the document's schemas (request body, and response body at its status),
// and every operation with a JSON body has one. A changed schema or a new
// operation fails here until `go test ./internal/http/api -run
// TestExamplesFromAHappyPath -update` records them again.
func TestCommittedExamplesMatchTheDocument(t *testing.T) {
	t.Parallel()
	raw := servedDocument(t)
	ex, err := api.Examples()
	require.NoError(t, err)
	checkExamples(t, raw, ex)

	// The document carries them, by operationId.
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			RequestBody *struct {
				Content map[string]struct {
					Examples map[string]struct{ Value json.RawMessage } `json:"examples"`
				} `json:"content"`
			} `json:"requestBody"`
			Responses map[string]struct {
				Content map[string]struct {
					Examples map[string]struct{ Value json.RawMessage } `json:"examples"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	carried := 0
	for _, item := range doc.Paths {
		for _, op := range item {
			e, ok := ex[op.OperationID]
			if !ok {
				continue
			}
			if len(e.RequestBody) > 0 {
				require.JSONEq(t, string(e.RequestBody), string(op.RequestBody.Content["application/json"].Examples["recorded"].Value), op.OperationID)
				carried++
			}
			if len(e.ResponseBody) > 0 {
				got := op.Responses[strconv.Itoa(e.Status)].Content["application/json"].Examples["recorded"].Value
				require.JSONEq(t, string(e.ResponseBody), string(got), op.OperationID)
				carried++
			}
		}
	}
	require.Greater(t, carried, 50)
}

// servedDocument is /v1/openapi.json of an admin API with every job type.
func servedDocument(t *testing.T) []byte {
	t.Helper()
	s := &api.Server{
		Config:   api.Config{AdminToken: examplesToken, MaxBodyBytes: 1 << 20, Kinds: workers.Kinds()},
		Logger:   slog.New(slog.DiscardHandler),
		Gatherer: prometheus.NewRegistry(),
		Admin:    true,
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, api.SpecPath, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.Bytes()
}

// operation is one operation of the document.
type operation struct {
	id, method, template string
	path                 *regexp.Regexp
	literal              int
	requestSchema        string         // JSON pointer of the JSON request body's schema, or ""
	responseSchemas      map[int]string // 2xx status → pointer of its JSON body's schema
}

// operations lists the document's operations, most specific template first.
func operations(t *testing.T, raw []byte) []operation {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			RequestBody *struct {
				Content map[string]json.RawMessage `json:"content"`
			} `json:"requestBody"`
			Responses map[string]struct {
				Content map[string]struct {
					Schema json.RawMessage `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	esc := func(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }
	var ops []operation
	for tmpl, item := range doc.Paths {
		var re strings.Builder
		literal := 0
		for _, part := range regexp.MustCompile(`\{[^}/]+\}|[^{]+`).FindAllString(tmpl, -1) {
			if strings.HasPrefix(part, "{") {
				re.WriteString(`[^/]+`)
			} else {
				re.WriteString(regexp.QuoteMeta(part))
				literal += len(part)
			}
		}
		for method, op := range item {
			base := "#/paths/" + esc(tmpl) + "/" + method
			o := operation{id: op.OperationID, method: strings.ToUpper(method), template: tmpl,
				path: regexp.MustCompile("^" + re.String() + "$"), literal: literal, responseSchemas: map[int]string{}}
			if op.RequestBody != nil {
				if _, ok := op.RequestBody.Content["application/json"]; ok {
					o.requestSchema = base + "/requestBody/content/application~1json/schema"
				}
			}
			for status, r := range op.Responses {
				code, err := strconv.Atoi(status)
				if err != nil || code/100 != 2 {
					continue
				}
				if mt, ok := r.Content["application/json"]; ok && len(mt.Schema) > 0 {
					o.responseSchemas[code] = base + "/responses/" + status + "/content/application~1json/schema"
				}
			}
			ops = append(ops, o)
		}
	}
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].literal != ops[j].literal {
			return ops[i].literal > ops[j].literal
		}
		return ops[i].id < ops[j].id
	})
	return ops
}

// checkExamples requires an example for every operation with a JSON request
// body or a JSON success body, and every example to belong to an operation
// and to match the document's schema of its request body and of its
// response body at its status (JSON Schema 2020-12 over the document itself,
// formats asserted, as internal/contract validates responses).
func checkExamples(t *testing.T, raw []byte, ex map[string]api.Example) {
	t.Helper()
	docValue, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	const docURL = "mem:///openapi.json"
	require.NoError(t, c.AddResource(docURL, docValue))
	validate := func(ptr string, body json.RawMessage) error {
		sch, err := c.Compile(docURL + ptr)
		if err != nil {
			return err
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
		if err != nil {
			return err
		}
		return sch.Validate(v)
	}

	ops := operations(t, raw)
	known := map[string]operation{}
	var missing []string
	for _, op := range ops {
		known[op.id] = op
		e := ex[op.id]
		if op.requestSchema != "" && len(e.RequestBody) == 0 {
			missing = append(missing, op.id+" ("+op.method+" "+op.template+"): request body")
		}
		if len(op.responseSchemas) > 0 && len(e.ResponseBody) == 0 {
			missing = append(missing, op.id+" ("+op.method+" "+op.template+"): response body")
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "operations with a JSON body and no recorded example")
	for id, e := range ex {
		op, ok := known[id]
		require.True(t, ok, "example %s: no such operation in the document", id)
		require.Equal(t, op.method, e.Method, id)
		u, err := url.Parse(e.Path)
		require.NoError(t, err, id)
		require.Regexp(t, op.path, u.EscapedPath(), "example %s: the path is not %s", id, op.template)
		if len(e.RequestBody) > 0 {
			require.NotEmpty(t, op.requestSchema, "example %s: the operation takes no JSON body", id)
			require.NoError(t, validate(op.requestSchema, e.RequestBody), "example %s: request body", id)
		}
		if len(e.ResponseBody) > 0 {
			ptr, ok := op.responseSchemas[e.Status]
			require.True(t, ok, "example %s: status %d has no JSON body in the document", id, e.Status)
			require.NoError(t, validate(ptr, e.ResponseBody), "example %s: response body (%d)", id, e.Status)
		}
	}
}

// exchange is one request a client sent and the answer it got.
type exchange struct {
	method, path  string // path with its query
	requestBody   []byte // JSON only
	status        int
	responseBody  []byte // JSON only
	responseIsRaw bool
}

// recorder is a transport that keeps every exchange.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	log  []exchange
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	rb, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	if err != nil {
		return resp, nil // the client sees the broken body; nothing to keep
	}
	x := exchange{method: req.Method, path: req.URL.RequestURI(), status: resp.StatusCode}
	if isJSON(req.Header.Get("Content-Type")) && len(body) > 0 {
		x.requestBody = compact(body)
	}
	if isJSON(resp.Header.Get("Content-Type")) && len(rb) > 0 {
		x.responseBody = compact(rb)
	}
	r.mu.Lock()
	r.log = append(r.log, x)
	r.mu.Unlock()
	return resp, nil
}

func isJSON(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "application/json"
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil // not JSON after all: no example
	}
	return buf.Bytes()
}

// examples picks one exchange per operation: the first answered 2xx, one
// with a JSON response body before one without.
func (r *recorder) examples(t *testing.T, ops []operation) map[string]api.Example {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]api.Example{}
	for _, x := range r.log {
		if x.status/100 != 2 {
			continue
		}
		u, err := url.Parse(x.path)
		require.NoError(t, err)
		var op *operation
		for i := range ops {
			if ops[i].method == x.method && ops[i].path.MatchString(u.EscapedPath()) {
				op = &ops[i]
				break
			}
		}
		require.NotNil(t, op, "%s %s is no operation of the document", x.method, x.path)
		if prev, ok := out[op.id]; ok && (len(prev.ResponseBody) > 0 || len(x.responseBody) == 0) {
			continue
		}
		e := api.Example{Method: x.method, Path: x.path, Status: x.status}
		var cutReq, cutResp bool
		e.RequestBody, cutReq = shorten(t, x.requestBody)
		e.ResponseBody, cutResp = shorten(t, x.responseBody)
		e.Shortened = cutReq || cutResp
		out[op.id] = e
	}
	return out
}

// Limits of an example's arrays and strings (shorten).
const (
	maxExampleItems = 8
	maxExampleChars = 4000
	cutExampleChars = 1500
)

// shorten cuts the arrays of a JSON body to maxExampleItems items and its
// strings longer than maxExampleChars to cutExampleChars (at a line end
// when there is one), saying how much was left out; it reports whether it
// cut anything.
func shorten(t *testing.T, body []byte) ([]byte, bool) {
	t.Helper()
	if len(body) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	cut, redacted := false, false
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case []any:
			if len(x) > maxExampleItems {
				x, cut = x[:maxExampleItems], true
			}
			for i := range x {
				x[i] = walk(x[i])
			}
			return x
		case map[string]any:
			for k := range x {
				// An API key's token is shown once; its secret part is
				// not published, even from a throwaway database.
				if tok, ok := x[k].(string); ok && k == "token" {
					if i := strings.LastIndexByte(tok, '_'); i > 0 {
						x[k], redacted = tok[:i+1]+strings.Repeat("x", len(tok)-i-1), true
						continue
					}
				}
				x[k] = walk(x[k])
			}
			return x
		case string:
			if len(x) <= maxExampleChars {
				return x
			}
			cut = true
			head := strings.ToValidUTF8(x[:cutExampleChars], "")
			if i := strings.LastIndexByte(head, '\n'); i > 0 {
				head = head[:i+1]
			}
			return head + fmt.Sprintf("… (%d more characters in the recorded exchange)", len(x)-len(head))
		}
		return v
	}
	v = walk(v)
	if !cut && !redacted {
		return body, false
	}
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b, cut
}

// The examples come from a happy path through the real service (River
// workers, admin API, Postgres): the battery maker's walk-through (`bpc
// demo`: documents, snapshot, rules, product, passport, compile, sign,
// activate, exports, replay, public verification), then what it does not
// call — tenants, keys, jobs, events, webhooks, lists and the QR check.
// One exchange per operation becomes its example; all must match the
// document, and every operation with a JSON body must have one. With
// -update they are written to examples.json.
func TestExamplesFromAHappyPath(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testdb.New(t)
	env := map[string]string{
		"DATABASE_URL": testdb.URL(),
		"BPC_ENV":      "dev", // as `make demo` runs
		// Explicit, so that the dev default (.bpc-dev/ in the working
		// directory) is not written into the package directory.
		"BPC_KEY_ENCRYPTION_KEY":                  "ZXhhbXBsZXMga2V5IGVuY3J5cHRpb24ga2V5LCAzMmI=",
		"BPC_ADMIN_TOKEN":                         examplesToken,
		"BPC_HTTP_ADDR":                           "127.0.0.1:0",
		"BPC_WORKER_ID":                           "examples-" + uuid.NewString()[:8],
		"BPC_JOBS_POLL_INTERVAL_MS":               "20",
		"BPC_JOBS_BACKOFF_UNIT_MS":                "25",
		"BPC_EXPORT_DIR":                          t.TempDir(), // not the package directory
		"BPC_WEBHOOK_ALLOW_PRIVATE":               "true",      // the receiver below is on loopback
		"BPC_WORKER_SHUTDOWN_TIMEOUT_MS":          "3000",
		"BPC_MAINTENANCE_CONSISTENCY_INTERVAL_MS": "0",
		"BPC_MAINTENANCE_RETENTION_INTERVAL_MS":   "0",
	}
	cfg, err := service.LoadConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	var logs bytes.Buffer
	var logsMu sync.Mutex
	app, err := service.New(cfg, service.RoleAll, service.NewLogger(cfg, lockedWriter{&logsMu, &logs}), pool)
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(context.Background())
	require.NoError(t, app.Start(runCtx))
	t.Cleanup(func() {
		app.Stop(context.Background())
		cancel()
		if t.Failed() {
			logsMu.Lock()
			t.Logf("service log:\n%s", logs.String())
			logsMu.Unlock()
		}
	})
	base := "http://" + app.Addr()

	rec := &recorder{next: http.DefaultTransport}
	client := func(token string) *apiclient.Client {
		c := apiclient.New(base, token, store.DevTenantID.String())
		c.HTTP = &http.Client{Transport: rec}
		c.PollInterval = 50 * time.Millisecond
		// Generous did-not-hang bounds: the machine may be busy.
		c.JobTimeout, c.RequestTimeout = 3*time.Minute, 2*time.Minute
		return c
	}
	platform := client(examplesToken)

	var out bytes.Buffer
	require.NoError(t, demo.Run(ctx, platform, t.TempDir(), &out), "the walk-through:\n%s", out.String())

	tenant := store.DevTenantID.String()
	do := func(method, path string, body, into any) {
		t.Helper()
		require.NoError(t, platform.Do(ctx, method, path, body, into), "%s %s", method, path)
	}
	get := func(path string, into any, kv ...string) {
		t.Helper()
		do(http.MethodGet, platform.TenantPath(path, kv...), nil, into)
	}

	// Tenants and keys.
	do(http.MethodPost, "/v1/tenants", map[string]any{"slug": "cell-maker-" + uuid.NewString()[:6], "name": "Cell maker GmbH"}, nil)
	do(http.MethodGet, "/v1/tenants", nil, nil)
	get("/v1/api-keys", nil)
	do(http.MethodPatch, "/v1/tenants/"+tenant, map[string]any{"quotas": map[string]any{"webhook_endpoints": 20, "queued_jobs": 50000}}, nil)
	do(http.MethodGet, "/v1/tenants/"+tenant+"/usage", nil, nil)

	// Events and webhooks, to a receiver that says 200.
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(receiver.Close)
	var ep struct {
		WebhookEndpointID string `json:"webhook_endpoint_id"`
	}
	do(http.MethodPost, "/v1/webhook-endpoints", map[string]any{"tenant_id": tenant, "url": receiver.URL + "/bpc-events",
		"secret": "whsec-examples-0123456789abcdef"}, &ep)
	var sub struct {
		WebhookSubscriptionID string `json:"webhook_subscription_id"`
	}
	do(http.MethodPost, "/v1/webhook-subscriptions", map[string]any{"tenant_id": tenant, "webhook_endpoint_id": ep.WebhookEndpointID,
		"event_type": "passport.activated"}, &sub)
	get("/v1/webhook-endpoints", nil)
	get(apiclient.Path("/v1/webhook-endpoints", ep.WebhookEndpointID), nil)
	get("/v1/webhook-subscriptions", nil)
	do(http.MethodPost, "/v1/events", map[string]any{"tenant_id": tenant, "aggregate_type": "Passport",
		"aggregate_id": uuid.NewString(), "event_type": "passport.activated", "payload": map[string]any{"note": "recalled by the OEM"},
		"actor_id": uuid.NewString()}, nil) // the platform names its actor (a user of its own)
	var ping struct {
		WebhookDeliveryID string `json:"webhook_delivery_id"`
		JobID             string `json:"job_id"`
	}
	do(http.MethodPost, platform.TenantPath(apiclient.Path("/v1/webhook-endpoints", ep.WebhookEndpointID, "ping")), nil, &ping)
	_, err = platform.WaitJob(ctx, &apiclient.Job{JobID: ping.JobID})
	require.NoError(t, err)
	get(apiclient.Path("/v1/webhook-deliveries", ping.WebhookDeliveryID), nil)
	do(http.MethodPatch, platform.TenantPath(apiclient.Path("/v1/webhook-endpoints", ep.WebhookEndpointID)),
		map[string]any{"url": receiver.URL + "/bpc-events/v2"}, nil)
	do(http.MethodDelete, platform.TenantPath(apiclient.Path("/v1/webhook-subscriptions", sub.WebhookSubscriptionID)), nil, nil)
	do(http.MethodDelete, platform.TenantPath(apiclient.Path("/v1/webhook-endpoints", ep.WebhookEndpointID)), nil, nil)

	// Jobs: a passport's QR code generated again, a batch of exports, one
	// scheduled for tomorrow cancelled and retried.
	pv := latestPassportVersion(t, rec)
	var job apiclient.Job
	do(http.MethodPost, "/v1/jobs", map[string]any{"type": jobargs.KindGenerateQR, "tenant_id": tenant,
		"payload": map[string]any{"passport_version_id": pv}}, &job)
	_, err = platform.WaitJob(ctx, &job)
	require.NoError(t, err)
	do(http.MethodPost, "/v1/jobs:batch", map[string]any{"jobs": []map[string]any{
		{"type": jobargs.KindExport, "tenant_id": tenant, "payload": map[string]any{"passport_version_id": pv, "format": "JSON"}},
		{"type": jobargs.KindExport, "tenant_id": tenant, "payload": map[string]any{"passport_version_id": pv, "format": "PDF"}},
	}}, nil)
	var later apiclient.Job
	do(http.MethodPost, "/v1/jobs", map[string]any{"type": jobargs.KindGenerateQR, "tenant_id": tenant,
		"payload": map[string]any{"passport_version_id": pv}, "scheduled_at": time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)}, &later)
	do(http.MethodPost, platform.TenantPath(apiclient.Path("/v1/jobs", later.JobID, "cancel")), nil, nil)
	do(http.MethodPost, platform.TenantPath(apiclient.Path("/v1/jobs", later.JobID, "retry")), nil, nil)
	get("/v1/jobs", nil, "limit", "5")

	// Lists the walk-through does not read, and the QR check a scanner
	// does.
	get("/v1/facts", nil, "limit", "5")
	var docs, pkgs, products struct {
		Items []map[string]any `json:"items"`
	}
	get("/v1/documents", &docs)
	get("/v1/rule-packages", &pkgs)
	get("/v1/battery-products", &products)
	for _, one := range []struct {
		list       []map[string]any
		prefix, id string
	}{{docs.Items, "/v1/documents", "document_id"}, {pkgs.Items, "/v1/rule-packages", "rule_package_id"},
		{products.Items, "/v1/battery-products", "battery_product_id"}} {
		require.NotEmpty(t, one.list, one.prefix)
		get(apiclient.Path(one.prefix, fmt.Sprint(one.list[0][one.id])), nil)
	}
	snapshot := recordedMember(t, rec, http.MethodPost, "/v1/snapshots", "snapshot_id")
	get(apiclient.Path("/v1/snapshots", snapshot), nil)
	get(apiclient.Path("/v1/snapshots", snapshot, "items"), nil)
	var qr struct {
		QRPayload *string `json:"qr_payload"`
	}
	get(apiclient.Path("/v1/passport-versions", pv), &qr)
	require.NotNil(t, qr.QRPayload)
	anonymous := client("")
	require.NoError(t, anonymous.Do(ctx, http.MethodGet, "/public/v1/verify?qr="+url.QueryEscape(*qr.QRPayload), nil, nil))
	// The issuer the demo declared, as its admin and as anyone reads it.
	do(http.MethodGet, "/v1/tenants/"+tenant+"/issuer", nil, nil)
	require.NoError(t, anonymous.Do(ctx, http.MethodGet, "/public/v1/issuers/"+tenant, nil, nil))
	// The QR code is a BPC-QR-2 link; its path and query are what a phone opens here.
	require.NoError(t, anonymous.Do(ctx, http.MethodGet, (*qr.QRPayload)[strings.LastIndex(*qr.QRPayload, "/p/"):], nil, nil))
	require.NoError(t, anonymous.Do(ctx, http.MethodGet, "/v1/health/live", nil, nil))
	require.NoError(t, anonymous.Do(ctx, http.MethodGet, "/v1/health/ready", nil, nil))
	require.NoError(t, anonymous.Do(ctx, http.MethodGet, "/v1", nil, nil))

	// Signing keys: a rotation, then the new key revoked (the versions of
	// the walk-through stay signed by the retired one).
	var rotated struct {
		KeyID string `json:"key_id"`
	}
	do(http.MethodPost, "/v1/signing-keys:rotate", map[string]any{"tenant_id": tenant}, &rotated)
	do(http.MethodPost, apiclient.Path("/v1/signing-keys", rotated.KeyID, "revoke"),
		map[string]any{"tenant_id": tenant, "reason": "The laptop holding a copy was stolen"}, nil)

	raw := servedDocument(t)
	ex := rec.examples(t, operations(t, raw))
	checkExamples(t, raw, ex)
	if *updateExamples {
		b, err := json.MarshalIndent(ex, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(api.ExamplesFile, append(b, '\n'), 0o644))
		t.Logf("wrote %d examples to %s", len(ex), api.ExamplesFile)
	}
}

// latestPassportVersion is the passport version the walk-through activated:
// the last one whose activation it recorded.
func latestPassportVersion(t *testing.T, r *recorder) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	re := regexp.MustCompile(`^/v1/passport-versions/([0-9a-f-]{36})/activate`)
	for i := len(r.log) - 1; i >= 0; i-- {
		if m := re.FindStringSubmatch(r.log[i].path); m != nil && r.log[i].status == http.StatusOK {
			return m[1]
		}
	}
	t.Fatal("the walk-through activated no passport version")
	return ""
}

// recordedMember is a member of the JSON body of the last 2xx answer to
// method path (without its query).
func recordedMember(t *testing.T, r *recorder, method, path, member string) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.log) - 1; i >= 0; i-- {
		x := r.log[i]
		if p, _, _ := strings.Cut(x.path, "?"); x.method == method && p == path && x.status/100 == 2 {
			var body map[string]any
			require.NoError(t, json.Unmarshal(x.responseBody, &body))
			require.Contains(t, body, member)
			return fmt.Sprint(body[member])
		}
	}
	t.Fatalf("no answer to %s %s was recorded", method, path)
	return ""
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
