package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/workers"
)

// Each rule below is written once, in a struct tag or a type's Schema, and
// nowhere in a handler: the server enforces it because Huma validates the
// request against the schema the document is generated from. The test
// server has no store, so a request that passed validation would fail
// with 500, not the 422 naming the field.
func TestRequestRulesAreEnforcedFromTheTypes(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	const id = "3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f"
	doc := `"tenant_id":"` + devTenant + `"`
	job := func(extra string) string {
		return `{` + doc + `,"type":"DELIVER_WEBHOOK","payload":{"webhook_delivery_id":"` + id + `"}` + extra + `}`
	}
	for _, tc := range []struct {
		name, method, path, body string
		field, message           string
	}{
		{"over-long name", "POST", "/v1/documents", `{` + doc + `,"kind":"BOM","name":"` + strings.Repeat("n", 60_000) + `"}`,
			"name", "name: must be at most 200 characters"},
		{"empty name", "POST", "/v1/battery-products", `{` + doc + `,"sku":"s","name":""}`,
			"name", "name: must not be empty"},
		{"missing member", "POST", "/v1/documents", `{` + doc + `,"name":"x"}`,
			"kind", "kind: is required"},
		{"bad enum", "POST", "/v1/documents", `{` + doc + `,"kind":"INVOICE","name":"x"}`,
			"kind", "kind: must be one of BOM, DUE_DILIGENCE, PCF"},
		{"bad role", "POST", "/v1/api-keys", `{` + doc + `,"name":"k","role":"owner"}`,
			"role", "role: must be one of admin, writer, reader"},
		{"bad status filter", "GET", "/v1/jobs?status=DONE", ``,
			"status", "status: must be one of QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED, DEAD_LETTER"},
		{"bad job type filter", "GET", "/v1/jobs?type=MAKE_COFFEE", ``,
			"type", "type: must be one of " + strings.Join(jobargs.Names(workers.Kinds()), ", ")},
		{"integer out of range", "GET", "/v1/jobs?limit=501", ``,
			"limit", "limit: must be at most 500"},
		{"not an integer", "GET", "/v1/facts?limit=ten&tenant_id=" + devTenant, ``,
			"limit", "limit: must be an integer"},
		{"wait_ms out of range", "GET", "/v1/jobs/" + id + "?wait_ms=30001", ``,
			"wait_ms", "wait_ms: must be at most 30000"},
		{"waitMs alias out of range", "GET", "/v1/jobs/" + id + "?waitMs=-1", ``,
			"waitMs", "waitMs: must be at least 0"},
		{"bad time", "GET", "/v1/jobs?created_after=yesterday", ``,
			"created_after", "created_after: must be an RFC 3339 time such as 2026-11-27T08:00:00Z"},
		{"nil uuid in the path", "GET", "/v1/documents/" + nilUUID, ``,
			"id", "id: must not be the nil uuid " + nilUUID},
		{"nil uuid in the query", "GET", "/v1/documents?tenant_id=" + nilUUID, ``,
			"tenant_id", "tenant_id: must not be the nil uuid " + nilUUID},
		{"nil uuid in the body", "POST", "/v1/passports", `{` + doc + `,"battery_product_id":"` + nilUUID + `"}`,
			"battery_product_id", "battery_product_id: must not be the nil uuid " + nilUUID},
		{"nil uuid in a list", "POST", "/v1/snapshots/" + id + "/items", `{"fact_ids":["` + id + `","` + nilUUID + `"]}`,
			"fact_ids[1]", "fact_ids[1]: must not be the nil uuid " + nilUUID},
		{"not a uuid in the path", "GET", "/v1/jobs/not-a-uuid", ``,
			"job_id", "job_id: " + msgUUID},
		{"not a uuid in the body", "POST", "/v1/snapshots", `{"tenant_id":"dev"}`,
			"tenant_id", "tenant_id: " + msgUUID},
		{"NUL in a body string", "POST", "/v1/documents", `{` + doc + `,"kind":"BOM","name":"a\u0000b"}`,
			"name", "name: must not contain a NUL character"},
		{"NUL in a free-form payload", "POST", "/v1/events", `{` + doc + `,"aggregate_type":"A","aggregate_id":"` + id + `","event_type":"e","payload":{"x":"\u0000"}}`,
			"payload.x", "payload.x: must not contain a NUL character"},
		{"unknown member", "POST", "/v1/documents", `{` + doc + `,"kind":"BOM","name":"x","colour":1}`,
			"colour", "colour: unknown field"},
		{"unknown nested member", "POST", "/v1/jobs", `{` + doc + `,"type":"DELIVER_WEBHOOK","payload":{"webhook_delivery_id":"` + id + `","colour":1}}`,
			"payload.colour", "payload.colour: unknown field"},
		{"unknown query parameter", "GET", "/v1/jobs?colour=red", ``,
			"colour", "colour: is not a query parameter of this route; it takes created_after, created_before, cursor, limit, status, tenant_id, type"},
		{"unknown job type", "POST", "/v1/jobs", `{` + doc + `,"type":"MAKE_COFFEE"}`,
			"type", `type: unknown job type "MAKE_COFFEE"`},
		{"batch item field", "POST", "/v1/jobs:batch", `{"jobs":[` + job("") + `,` + job("") + `,` + job("") + `,` + job(`,"priority":9`) + `]}`,
			"jobs[3].priority", "jobs[3].priority: must be at most 3"},
		{"batch too long", "POST", "/v1/jobs:batch", `{"jobs":[` + strings.TrimSuffix(strings.Repeat(`{"type":"DELIVER_WEBHOOK"},`, 1001), ",") + `]}`,
			"jobs", "jobs: must hold at most 1000 items"},
		{"bad export format", "POST", "/v1/passport-versions/" + id + "/export", `{"format":"CSV"}`,
			"format", "format: must be one of JSON, PDF, json, pdf"},
		{"actor_id too long", "POST", "/v1/events", `{` + doc + `,"aggregate_type":"A","aggregate_id":"` + id + `","event_type":"e","actor_id":"` + strings.Repeat("a", 201) + `","payload":{}}`,
			"actor_id", "actor_id: must be at most 200 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := serve(h, tc.method, tc.path, tc.body, true)
			require.Equal(t, http.StatusUnprocessableEntity, rec.Code, rec.Body.String())
			env := readEnvelope(t, rec)
			require.Equal(t, "VALIDATION_ERROR", env.Error.Code)
			require.Equal(t, tc.field, env.Error.Details["field"], env.Error.Message)
			require.Equal(t, tc.message, env.Error.Message)
		})
	}
}

// A uuid is taken in its canonical 36-character form only, wherever it is
// taken (ID): not braced, urn:-prefixed or without dashes.
func TestIDTakesTheCanonicalFormOnly(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	for _, bad := range []string{
		"{11111111-1111-4111-8111-111111111111}", "urn:uuid:11111111-1111-4111-8111-111111111111",
		"11111111111141118111111111111111", "zz",
	} {
		rec := serve(h, http.MethodGet, "/v1/jobs/"+bad, "", true)
		requireInvalid(t, rec, "job_id", bad)
		rec = serve(h, http.MethodPost, "/v1/snapshots", `{"tenant_id":"`+bad+`"}`, true)
		requireInvalid(t, rec, "tenant_id", bad)
	}
	var id ID
	require.NoError(t, id.UnmarshalText([]byte("11111111-1111-4111-8111-111111111111")))
	require.Equal(t, "11111111-1111-4111-8111-111111111111", id.String())
	require.Error(t, id.UnmarshalText([]byte("11111111111141118111111111111111")))
}

// The document states the bounds the server answers with: the message of a
// refused request quotes the very schema the document serves.
func TestServerAndDocumentAgree(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	rec := serve(h, http.MethodGet, SpecPath, "", false)
	require.Equal(t, http.StatusOK, rec.Code)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					MaxLength *int  `json:"maxLength"`
					Enum      []any `json:"enum"`
				} `json:"properties"`
				Required []string `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	create := doc.Components.Schemas["CreateDocumentInput"]
	require.NotContains(t, create.Required, "tenant_id", "a tenant key implies it")
	maxName := create.Properties["name"].MaxLength
	require.NotNil(t, maxName)
	rec = serve(h, http.MethodPost, "/v1/documents", `{"kind":"BOM","name":"`+strings.Repeat("n", *maxName+1)+`","tenant_id":"`+devTenant+`"}`, true)
	require.Equal(t, fmt.Sprintf("name: must be at most %d characters", *maxName), readEnvelope(t, rec).Error.Message)

	var kinds []string
	for _, k := range create.Properties["kind"].Enum {
		kinds = append(kinds, k.(string))
	}
	require.NotEmpty(t, kinds)
	rec = serve(h, http.MethodPost, "/v1/documents", `{"kind":"INVOICE","name":"x","tenant_id":"`+devTenant+`"}`, true)
	require.Equal(t, "kind: must be one of "+strings.Join(kinds, ", "), readEnvelope(t, rec).Error.Message)

	for name, s := range doc.Components.Schemas {
		if strings.HasSuffix(name, "Input") || strings.HasSuffix(name, "Request") {
			require.NotContains(t, s.Required, "tenant_id", "%s: tenant_id is never schema-required", name)
		}
	}
	event := doc.Components.Schemas["AppendEventRequest"]
	require.NotContains(t, event.Required, "actor_id")
}

// The body is JSON whatever the Content-Type says, so that `curl -d` (a
// form Content-Type) and a request without one work as before; it must be
// one JSON object.
func TestBodyIsJSONWhateverTheContentType(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	for _, ct := range []string{"", "application/x-www-form-urlencoded", "text/plain", "application/json; charset=utf-8"} {
		r := httptest.NewRequest(http.MethodPost, "/v1/documents", strings.NewReader(`{"kind":"INVOICE","name":"x","tenant_id":"`+devTenant+`"}`))
		r.Header.Set("Authorization", "Bearer "+testAdminToken)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		requireInvalid(t, rec, "kind", ct)
	}
	for body, message := range map[string]string{
		``:                      "request body is empty; a JSON object is required",
		`[]`:                    "request body must be a JSON object",
		`"x"`:                   "request body must be a JSON object",
		`{"name":"a"} {}`:       "request body must hold exactly one JSON value",
		`{"name":`:              "request body is not valid JSON: unexpected EOF",
		"{\"name\":\"\xff\"}":   "",
		`{"tenant_id":1e99999}`: "",
	} {
		rec := serve(h, http.MethodPost, "/v1/documents", body, true)
		env := readEnvelope(t, rec)
		if message == "" {
			require.Equal(t, http.StatusUnprocessableEntity, rec.Code, "%q: %s", body, rec.Body.String())
			continue
		}
		require.Equal(t, http.StatusBadRequest, rec.Code, "%q: %s", body, rec.Body.String())
		require.Equal(t, "MALFORMED_JSON", env.Error.Code)
		require.Equal(t, message, env.Error.Message, body)
	}
}

// A route that reads no query parameter ignores the query, as it always
// has; one that reads any refuses a name it does not read.
func TestUnknownQueryParameters(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	rec := serve(h, http.MethodGet, "/v1/health/live?probe=k8s", "", false)
	require.Equal(t, http.StatusOK, rec.Code)
	rec = serve(h, http.MethodGet, "/v1/documents/3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f?tenant=acme", "", true)
	requireInvalid(t, rec, "tenant")
	require.Equal(t, "tenant: is not a query parameter of this route; it takes tenant_id", readEnvelope(t, rec).Error.Message)

	// waitMs is read (a bad value names it) but documented only as
	// wait_ms: ogen cannot generate both.
	rec = serve(h, http.MethodGet, "/v1/jobs/3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f?waitMs=x", "", true)
	requireInvalid(t, rec, "waitMs")
	doc := serve(h, http.MethodGet, SpecPath, "", false).Body.String()
	require.Contains(t, doc, `"name":"wait_ms"`)
	require.NotContains(t, doc, `"name":"waitMs"`)
}
