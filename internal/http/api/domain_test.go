package api

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
)

const devTenant = "00000000-0000-0000-0000-00000000de00"

// The domain endpoints validate their input before reaching the store (the
// test server has none): each bad request is answered with the envelope
// naming the field.
func TestDomainValidationNamesTheField(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	id := "3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f"
	okContent := base64.StdEncoding.EncodeToString([]byte(`{"a":1}`))
	cases := []struct {
		name, method, path, body string
		status                   int
		code, field              string
	}{
		{"document bad kind", "POST", "/v1/documents", `{"tenant_id":"` + devTenant + `","kind":"INVOICE","name":"x"}`, 422, "VALIDATION_ERROR", "kind"},
		{"document empty name", "POST", "/v1/documents", `{"tenant_id":"` + devTenant + `","kind":"BOM","name":"  "}`, 422, "VALIDATION_ERROR", "name"},
		{"document long name", "POST", "/v1/documents", `{"tenant_id":"` + devTenant + `","kind":"BOM","name":"` + strings.Repeat("é", 201) + `"}`, 422, "VALIDATION_ERROR", "name"},
		{"document unknown field", "POST", "/v1/documents", `{"tenant_id":"` + devTenant + `","kind":"BOM","name":"x","colour":1}`, 422, "VALIDATION_ERROR", "colour"},
		{"document bad tenant", "POST", "/v1/documents", `{"tenant_id":"dev","kind":"BOM","name":"x"}`, 422, "VALIDATION_ERROR", "tenant_id"},
		{"list documents without tenant", "GET", "/v1/documents", ``, 422, "VALIDATION_ERROR", "tenant_id"},
		{"get document bad id", "GET", "/v1/documents/42?tenant_id=" + devTenant, ``, 422, "VALIDATION_ERROR", "id"},
		{"upload wrong mime type", "POST", "/v1/documents/" + id + "/versions", `{"tenant_id":"` + devTenant + `","mime_type":"text/csv","content":"` + okContent + `"}`, 422, "UNSUPPORTED_FORMAT", "mime_type"},
		{"upload no mime type", "POST", "/v1/documents/" + id + "/versions", `{"tenant_id":"` + devTenant + `","content":"` + okContent + `"}`, 422, "VALIDATION_ERROR", "mime_type"},
		{"upload bad base64", "POST", "/v1/documents/" + id + "/versions", `{"tenant_id":"` + devTenant + `","mime_type":"application/json","content":"not base64!"}`, 422, "VALIDATION_ERROR", "content"},
		{"upload url-safe base64", "POST", "/v1/documents/" + id + "/versions", `{"tenant_id":"` + devTenant + `","mime_type":"application/json","content":"_-_-"}`, 422, "VALIDATION_ERROR", "content"},
		{"upload empty content", "POST", "/v1/documents/" + id + "/versions", `{"tenant_id":"` + devTenant + `","mime_type":"application/json","content":""}`, 422, "VALIDATION_ERROR", "content"},
		{"upload bad document id", "POST", "/v1/documents/x/versions", `{"tenant_id":"` + devTenant + `","mime_type":"application/json","content":"` + okContent + `"}`, 422, "VALIDATION_ERROR", "id"},
		{"facts limit", "GET", "/v1/facts?tenant_id=" + devTenant + "&limit=1001", ``, 422, "VALIDATION_ERROR", "limit"},
		{"facts bad version", "GET", "/v1/facts?tenant_id=" + devTenant + "&document_version_id=v1", ``, 422, "VALIDATION_ERROR", "document_version_id"},
		{"items empty", "POST", "/v1/snapshots/" + id + "/items", `{"tenant_id":"` + devTenant + `"}`, 422, "VALIDATION_ERROR", "fact_ids"},
		{"items bad fact id", "POST", "/v1/snapshots/" + id + "/items", `{"tenant_id":"` + devTenant + `","fact_ids":["` + id + `","nope"]}`, 422, "VALIDATION_ERROR", "fact_ids[1]"},
		{"items bad version id", "POST", "/v1/snapshots/" + id + "/items", `{"tenant_id":"` + devTenant + `","document_version_ids":["nope"]}`, 422, "VALIDATION_ERROR", "document_version_ids[0]"},
		{"seal bad id", "POST", "/v1/snapshots/nope/seal", `{"tenant_id":"` + devTenant + `"}`, 422, "VALIDATION_ERROR", "id"},
		{"rule package no name", "POST", "/v1/rule-packages", `{"tenant_id":"` + devTenant + `"}`, 422, "VALIDATION_ERROR", "name"},
		{"rule version no dsl", "POST", "/v1/rule-packages/" + id + "/versions", `{"tenant_id":"` + devTenant + `","tests_source":"x"}`, 422, "VALIDATION_ERROR", "dsl_source"},
		{"rule version no tests", "POST", "/v1/rule-packages/" + id + "/versions", `{"tenant_id":"` + devTenant + `","dsl_source":"x"}`, 422, "VALIDATION_ERROR", "tests_source"},
		{"rule version bad include", "GET", "/v1/rule-package-versions/" + id + "?tenant_id=" + devTenant + "&include=all", ``, 422, "VALIDATION_ERROR", "include"},
		{"rule tests bad seed", "POST", "/v1/rule-package-versions/" + id + "/test", `{"tenant_id":"` + devTenant + `","seed":"x"}`, 422, "VALIDATION_ERROR", "seed"},
		{"product no sku", "POST", "/v1/battery-products", `{"tenant_id":"` + devTenant + `","name":"x"}`, 422, "VALIDATION_ERROR", "sku"},
		{"passport bad product", "POST", "/v1/passports", `{"tenant_id":"` + devTenant + `","battery_product_id":"p"}`, 422, "VALIDATION_ERROR", "battery_product_id"},
		{"compile no snapshot", "POST", "/v1/passports/" + id + "/compile", `{"tenant_id":"` + devTenant + `","rule_package_version_id":"` + id + `"}`, 422, "VALIDATION_ERROR", "snapshot_id"},
		{"compile no rules", "POST", "/v1/passports/" + id + "/compile", `{"tenant_id":"` + devTenant + `","snapshot_id":"` + id + `"}`, 422, "VALIDATION_ERROR", "rule_package_version_id"},
		{"export bad format", "POST", "/v1/passport-versions/" + id + "/export", `{"tenant_id":"` + devTenant + `","format":"XML"}`, 422, "VALIDATION_ERROR", "format"},
		{"export no format", "POST", "/v1/passport-versions/" + id + "/export", `{"tenant_id":"` + devTenant + `"}`, 422, "VALIDATION_ERROR", "format"},
		{"export file bad format", "GET", "/v1/passport-versions/" + id + "/export-file?tenant_id=" + devTenant + "&format=csv", ``, 422, "VALIDATION_ERROR", "format"},
		{"payload bad id", "GET", "/v1/passport-versions/nope/payload?tenant_id=" + devTenant, ``, 422, "VALIDATION_ERROR", "id"},
		{"activate malformed body", "POST", "/v1/passport-versions/" + id + "/activate", `{`, 400, "MALFORMED_JSON", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := serve(h, tc.method, tc.path, tc.body, true)
			require.Equal(t, tc.status, rec.Code, "%s", rec.Body.String())
			env := readEnvelope(t, rec)
			require.Equal(t, tc.code, env.Error.Code, "%s", rec.Body.String())
			if tc.field != "" {
				require.Equal(t, tc.field, env.Error.Details["field"], "%s", rec.Body.String())
			}
		})
	}
}

// A rule source that does not parse or check is the rules package's own
// error (code, line, col), naming the source it is in.
func TestDomainRuleSourceErrorsCarryPosition(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	path := "/v1/rule-packages/3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f/versions"
	rec := serve(h, "POST", path, `{"tenant_id":"`+devTenant+`","dsl_source":"field a.b : Int =\n  1 + ;","tests_source":"x"}`, true)
	require.Equal(t, http.StatusUnprocessableEntity, rec.Code, "%s", rec.Body.String())
	env := readEnvelope(t, rec)
	require.Equal(t, string(errcode.RuleParseError), env.Error.Code)
	require.Equal(t, "dsl_source", env.Error.Details["source"])
	require.EqualValues(t, 2, env.Error.Details["line"], "%s", rec.Body.String())
	require.Contains(t, env.Error.Details, "col")
}

func TestDomainStatusCodes(t *testing.T) {
	t.Parallel()
	for code, want := range map[errcode.Code]int{
		errcode.Conflict:            http.StatusConflict,
		errcode.ReplayMismatch:      http.StatusConflict,
		errcode.SnapshotNotReady:    http.StatusConflict,
		errcode.SnapshotSealed:      http.StatusConflict,
		errcode.RuleTestsFailed:     http.StatusConflict,
		errcode.RulePkgNotPublished: http.StatusConflict,
		errcode.RuleParseError:      http.StatusUnprocessableEntity,
		errcode.RuleTypeError:       http.StatusUnprocessableEntity,
		errcode.UnitMismatch:        http.StatusUnprocessableEntity,
		errcode.RuleCycleDetected:   http.StatusUnprocessableEntity,
		errcode.UnsupportedFormat:   http.StatusUnprocessableEntity,
	} {
		require.Equal(t, want, httpStatus(code), "%s", code)
	}
}

// The domain routes are admin routes: bearer token required, and not served
// at all by the worker role.
func TestDomainRoutesAreAdminOnly(t *testing.T) {
	t.Parallel()
	routes := []struct{ method, path string }{
		{http.MethodPost, "/v1/documents"},
		{http.MethodGet, "/v1/facts?tenant_id=" + devTenant},
		{http.MethodPost, "/v1/snapshots"},
		{http.MethodGet, "/v1/rule-packages?tenant_id=" + devTenant},
		{http.MethodGet, "/v1/battery-products?tenant_id=" + devTenant},
		{http.MethodGet, "/v1/passport-versions/3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f/payload?tenant_id=" + devTenant},
		{http.MethodGet, "/v1/signing-keys"},
	}
	admin := newAdminHandler(t)
	for _, route := range routes {
		rec := serve(admin, route.method, route.path, `{}`, false)
		require.Equal(t, http.StatusUnauthorized, rec.Code, "%s %s", route.method, route.path)
		require.Equal(t, "UNAUTHORIZED", readEnvelope(t, rec).Error.Code)
	}
	s := newTestServer()
	s.Gatherer = prometheus.NewRegistry()
	worker := checked(t, s)
	for _, route := range routes {
		rec := serve(worker, route.method, route.path, `{}`, true)
		require.Equal(t, http.StatusNotFound, rec.Code, "%s %s", route.method, route.path)
	}
}
