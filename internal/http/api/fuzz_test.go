package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/bpc-platform/bpc/internal/contract"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

// fuzzRoutes are the routes that decode a JSON body; {id} is a fixed uuid.
var fuzzRoutes = []string{
	"/v1/jobs", "/v1/jobs:batch", "/v1/tenants", "/v1/events", "/v1/webhook-endpoints",
	"/v1/webhook-subscriptions", "/v1/documents", "/v1/documents/{id}/versions", "/v1/snapshots",
	"/v1/snapshots/{id}/items", "/v1/snapshots/{id}/build", "/v1/snapshots/{id}/seal", "/v1/rule-packages",
	"/v1/rule-packages/{id}/versions", "/v1/rule-package-versions/{id}/test", "/v1/rule-package-versions/{id}/publish",
	"/v1/battery-products", "/v1/passports", "/v1/passports/{id}/compile", "/v1/passport-versions/{id}/activate",
	"/v1/passport-versions/{id}/export", "/v1/passport-versions/{id}/replay",
}

// FuzzAdminJSON sends arbitrary bodies to every JSON route of the admin API
// over a real database: no panic, no 5xx, and every rejection is a 4xx
// carrying the error envelope with a code and a correlation id.
func FuzzAdminJSON(f *testing.F) {
	pool := testdb.New(f)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	if err != nil {
		f.Fatal(err)
	}
	s := newTestServer()
	s.Admin, s.Gatherer, s.Store, s.River = true, prometheus.NewRegistry(), store.New(pool), client
	s.Config.Kinds = workers.Kinds()
	h := s.Handler()
	v := contract.New(f, h)

	seeds := []string{
		`{}`, `null`, `[]`, `{"tenant_id":"00000000-0000-0000-0000-00000000de00"}`,
		`{"type":"DELIVER_WEBHOOK","tenant_id":"00000000-0000-0000-0000-00000000de00","payload":{"webhook_delivery_id":"3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f"}}`,
		`{"jobs":[{"type":"PARSE_FACTS","tenant_id":"00000000-0000-0000-0000-00000000de00","payload":{"document_version_id":1}}]}`,
		`{"tenant_id":"00000000-0000-0000-0000-00000000de00","kind":"BOM","name":"x"}`,
		`{"tenant_id":"00000000-0000-0000-0000-00000000de00","mime_type":"application/json","content":"e30="}`,
		`{"tenant_id":"00000000-0000-0000-0000-00000000de00","dsl_source":"field a : Int = 1 / 0;","tests_source":""}`,
		`{"tenant_id":"00000000-0000-0000-0000-00000000de00","fact_ids":["3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f"]}`,
		`{"tenant_id":"00000000-0000-0000-0000-00000000de00","format":"json"}`,
		`{"tenant_id":"00000000-0000-0000-0000-00000000de00","seed":-1}`,
		`{"tenant_id":1e400}`, `{"a":` + strings.Repeat("[", 10000), "\xff\xfe",
	}
	for i := range fuzzRoutes {
		for _, b := range seeds {
			f.Add(uint8(i), []byte(b))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := strings.ReplaceAll(fuzzRoutes[int(route)%len(fuzzRoutes)], "{id}", "3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f")
		rec := serve(h, http.MethodPost, path, string(body), true)
		if err := v.Check(http.MethodPost, path, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
			t.Fatalf("POST %s %q: %d breaks the contract: %v", path, body, rec.Code, err)
		}
		if rec.Code >= 500 {
			t.Fatalf("POST %s %q: %d %s", path, body, rec.Code, rec.Body.String())
		}
		if rec.Code < 400 {
			return
		}
		var env envelope
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Error.Code == "" ||
			env.Error.CorrelationID == nil || *env.Error.CorrelationID == "" {
			t.Fatalf("POST %s %q: %d without the error envelope: %s", path, body, rec.Code, rec.Body.String())
		}
	})
}
