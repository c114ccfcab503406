package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/contract"
	"github.com/bpc-platform/bpc/workers"
)

// openAPIDoc is the part of the served document the tests read.
type openAPIDoc struct {
	OpenAPI    string                                 `json:"openapi"`
	Paths      map[string]map[string]openAPIOp        `json:"paths"`
	Components struct{ Schemas map[string]schemaDoc } `json:"components"`
}

type openAPIOp struct {
	OperationID string                        `json:"operationId"`
	Description string                        `json:"description"`
	Parameters  []struct{ Name, In string }   `json:"parameters"`
	RequestBody *struct{ Content mediaTypes } `json:"requestBody"`
	Responses   map[string]struct {
		Content mediaTypes `json:"content"`
	} `json:"responses"`
	Security []map[string][]string `json:"security"`
}

type mediaTypes map[string]struct {
	Schema *schemaDoc `json:"schema"`
}

type schemaDoc struct {
	Ref           string               `json:"$ref"`
	Type          any                  `json:"type"`
	Title         string               `json:"title"`
	Description   string               `json:"description"`
	Enum          []any                `json:"enum"`
	Properties    map[string]schemaDoc `json:"properties"`
	Items         *schemaDoc           `json:"items"`
	OneOf         []schemaDoc          `json:"oneOf"`
	Discriminator *struct {
		PropertyName string            `json:"propertyName"`
		Mapping      map[string]string `json:"mapping"`
	} `json:"discriminator"`
}

func fetchDoc(t *testing.T, h http.Handler) (openAPIDoc, []byte) {
	t.Helper()
	rec := serve(h, http.MethodGet, SpecPath, "", false)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var doc openAPIDoc
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	return doc, rec.Body.Bytes()
}

func (d openAPIDoc) schema(t *testing.T, ref string) schemaDoc {
	t.Helper()
	name, ok := strings.CutPrefix(ref, "#/components/schemas/")
	require.True(t, ok, "ref %q", ref)
	s, ok := d.Components.Schemas[name]
	require.True(t, ok, "no schema %s", name)
	return s
}

// The document lists every /v1, /public/v1 and /p/ route chi serves (but the
// document and its page), each with its path parameters, a documented
// success response with a schema (but 204), and the error envelope; admin
// routes require the bearer token, health, the index and public
// verification none.
func TestOpenAPIDocumentListsEveryRoute(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Admin, s.Gatherer = true, prometheus.NewRegistry()
	h := s.Handler()
	doc, raw := fetchDoc(t, h)
	require.Equal(t, "3.1.0", doc.OpenAPI)
	_, err := contract.NewFromJSON(raw)
	require.NoError(t, err)

	pathParam := regexp.MustCompile(`\{([^}]+)\}`)
	routes := 0
	err = chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		api := route == IndexPath || strings.HasPrefix(route, "/v1/") || strings.HasPrefix(route, "/public/v1/") || strings.HasPrefix(route, "/p/")
		if !api || route == SpecPath || strings.HasPrefix(route, DocsPath) {
			return nil
		}
		routes++
		op, ok := doc.Paths[route][strings.ToLower(method)]
		require.True(t, ok, "%s %s is not in the document", method, route)
		require.NotEmpty(t, op.OperationID, "%s %s", method, route)
		for _, m := range pathParam.FindAllStringSubmatch(route, -1) {
			require.True(t, hasParam(op, m[1], "path"), "%s %s does not document {%s}", method, route, m[1])
		}
		require.Contains(t, op.Responses, "default", "%s %s: the error envelope", method, route)
		require.Equal(t, "#/components/schemas/ErrorBody", op.Responses["default"].Content["application/json"].Schema.Ref)
		success := 0
		for status, resp := range op.Responses {
			if status[0] != '2' {
				continue
			}
			success++
			if status == "204" {
				continue
			}
			require.NotEmpty(t, resp.Content, "%s %s %s has no body schema", method, route, status)
			for ct, mt := range resp.Content {
				if strings.HasSuffix(ct, "json") { // binary bodies: the media type is the contract
					require.NotNil(t, mt.Schema, "%s %s %s %s", method, route, status, ct)
				}
			}
		}
		require.NotZero(t, success, "%s %s documents no success", method, route)
		public := strings.HasPrefix(route, "/v1/health/") || strings.HasPrefix(route, "/public/") || strings.HasPrefix(route, "/p/") || route == IndexPath
		require.Equal(t, !public, len(op.Security) > 0, "%s %s: bearer security", method, route)
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, routes, 50)
	documented := 0
	for _, item := range doc.Paths {
		documented += len(item)
	}
	require.Equal(t, routes, documented, "the document lists a route chi does not serve")
}

func hasParam(op openAPIOp, name, in string) bool {
	for _, p := range op.Parameters {
		if p.Name == name && p.In == in {
			return true
		}
	}
	return false
}

// Every job type of the registry is in the enqueue requests' documentation
// with its summary and its payload schema (derived from its args type, one
// member per JSON field), and the two enqueue operations name it.
func TestOpenAPIDocumentsEveryRegisteredKind(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Admin, s.Gatherer, s.Config.Kinds = true, prometheus.NewRegistry(), workers.Kinds()
	doc, _ := fetchDoc(t, s.Handler())

	enqueue := doc.Paths["/v1/jobs"]["post"]
	require.Equal(t, "#/components/schemas/EnqueueRequest", enqueue.RequestBody.Content["application/json"].Schema.Ref)
	batch := doc.Paths["/v1/jobs:batch"]["post"]
	jobs := batch.RequestBody.Content["application/json"].Schema.Properties["jobs"]
	require.Equal(t, "#/components/schemas/EnqueueRequest", jobs.Items.Ref)

	union := doc.schema(t, "#/components/schemas/EnqueueRequest")
	require.NotNil(t, union.Discriminator)
	require.Equal(t, "type", union.Discriminator.PropertyName)
	require.Len(t, union.OneOf, len(s.Config.Kinds))
	for _, k := range s.Config.Kinds {
		require.NotEmpty(t, k.Summary, "%s has no summary", k.Name)
		ref, ok := union.Discriminator.Mapping[k.Name]
		require.True(t, ok, "%s is not in the enqueue request's oneOf", k.Name)
		req := doc.schema(t, ref)
		require.Equal(t, []any{k.Name}, req.Properties["type"].Enum)
		require.Equal(t, k.Summary, req.Description)
		payload := doc.schema(t, req.Properties["payload"].Ref)
		require.Contains(t, payload.Description, k.Summary)
		for _, member := range jsonMembers(reflect.TypeOf(k.New()).Elem()) {
			require.Contains(t, payload.Properties, member, "%s payload schema lacks %s", k.Name, member)
		}
		for _, op := range []openAPIOp{enqueue, batch} {
			require.Contains(t, op.Description, k.Name+": "+k.Summary)
		}
	}
}

// jsonMembers lists the JSON member names of a struct, embedded structs
// flattened.
func jsonMembers(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "":
			out = append(out, jsonMembers(f.Type)...)
		case name == "-" || !f.IsExported():
		case name == "":
			out = append(out, f.Name)
		default:
			out = append(out, name)
		}
	}
	return out
}

// A panic is answered with the envelope carrying the request's correlation
// id, as its header does.
func TestPanicEnvelopeCarriesTheCorrelationID(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Admin, s.Gatherer = true, prometheus.NewRegistry()
	s.Ready = []ReadyCheck{{Name: "boom", Check: func(context.Context) error { panic("boom") }}}
	r := httptest.NewRequest(http.MethodGet, "/v1/health/ready", nil)
	r.Header.Set(HeaderCorrelationID, "corr-panic-1")
	rec := httptest.NewRecorder()
	checked(t, s).ServeHTTP(rec, r)
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	require.Equal(t, "corr-panic-1", rec.Header().Get(HeaderCorrelationID))
	env := readEnvelope(t, rec)
	require.Equal(t, "INTERNAL_ERROR", env.Error.Code)
	require.NotNil(t, env.Error.CorrelationID)
	require.Equal(t, "corr-panic-1", *env.Error.CorrelationID)
}
