package api

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
)

// convDoc is the served document as generic JSON, for the conventions of
// SPEC §17 that the typed openAPIDoc cannot see (an empty security list,
// headers, type lists).
type convDoc struct {
	Tags  []struct{ Name, Description string } `json:"tags"`
	Paths map[string]map[string]struct {
		OperationID string                      `json:"operationId"`
		Summary     string                      `json:"summary"`
		Description string                      `json:"description"`
		Tags        []string                    `json:"tags"`
		Security    *[]map[string][]string      `json:"security"`
		RequestBody *json.RawMessage            `json:"requestBody"`
		Responses   map[string]convResponse     `json:"responses"`
		Parameters  []struct{ Name, In string } `json:"parameters"`
	} `json:"paths"`
	Servers    []struct{ URL string } `json:"servers"`
	Components struct {
		Schemas map[string]any `json:"schemas"`
	} `json:"components"`
}

type convResponse struct {
	Headers map[string]struct {
		Required bool `json:"required"`
	} `json:"headers"`
	Content map[string]struct {
		Schema struct {
			Ref string `json:"$ref"`
		} `json:"schema"`
	} `json:"content"`
}

func fetchConvDoc(t *testing.T) (convDoc, []byte) {
	t.Helper()
	s := newTestServer()
	s.Admin, s.Gatherer = true, prometheus.NewRegistry()
	_, raw := fetchDoc(t, s.Handler())
	var doc convDoc
	require.NoError(t, json.Unmarshal(raw, &doc))
	return doc, raw
}

// Every operation has an entry in opDocs, so one tag (a tag of the
// document, described), a summary and a description that says who may
// call it.
func TestEveryOperationHasItsDocs(t *testing.T) {
	t.Parallel()
	doc, _ := fetchConvDoc(t)
	tags := map[string]bool{}
	for _, tag := range doc.Tags {
		require.NotEmpty(t, tag.Description, "tag %s", tag.Name)
		tags[tag.Name] = true
	}
	require.NotEmpty(t, doc.Servers, "the document names its servers")
	ops := 0
	for path, item := range doc.Paths {
		for method, op := range item {
			ops++
			_, ok := opDocs[op.OperationID]
			require.True(t, ok, "%s %s (%s) has no entry in opDocs (opdocs.go)", method, path, op.OperationID)
			require.Len(t, op.Tags, 1, "%s %s: exactly one tag", method, path)
			require.True(t, tags[op.Tags[0]], "%s %s: tag %q is not among the document's tags", method, path, op.Tags[0])
			require.NotEmpty(t, op.Summary, "%s %s", method, path)
			require.Contains(t, op.Description, "**Who may call it:**", "%s %s", method, path)
		}
	}
	require.Greater(t, ops, 50)
}

// Every response carries X-Correlation-Id; every operation documents the
// error responses that apply with the envelope (429 and 503 with
// Retry-After); health and public verification need no credentials
// (security: []), every other operation the bearer token.
func TestOpenAPIDocumentsErrorsHeadersAndSecurity(t *testing.T) {
	t.Parallel()
	doc, _ := fetchConvDoc(t)
	for path, item := range doc.Paths {
		for method, op := range item {
			where := strings.ToUpper(method) + " " + path
			public := strings.HasPrefix(path, "/v1/health/") || strings.HasPrefix(path, "/public/") || strings.HasPrefix(path, "/p/") || path == "/v1"
			require.NotNil(t, op.Security, "%s: security is explicit", where)
			if public {
				require.Empty(t, *op.Security, "%s: security []", where)
			} else {
				require.Equal(t, []map[string][]string{{"bearerAuth": {}}}, *op.Security, where)
			}
			for status, resp := range op.Responses {
				require.True(t, resp.Headers[HeaderCorrelationID].Required, "%s %s: X-Correlation-Id", where, status)
				if status == "429" || status == "503" && !strings.HasPrefix(path, "/v1/health/") {
					require.True(t, resp.Headers["Retry-After"].Required, "%s %s: Retry-After", where, status)
				}
				if status[0] == '4' || status == "503" && !strings.HasPrefix(path, "/v1/health/") {
					require.Equal(t, "#/components/schemas/ErrorBody", resp.Content["application/json"].Schema.Ref, "%s %s", where, status)
				}
			}
			want := []string{}
			switch {
			case strings.HasPrefix(path, "/public/") || strings.HasPrefix(path, "/p/"):
				want = append(want, "404", "422", "429")
			case !public:
				want = append(want, "401", "403", "422", "429")
			}
			if strings.Contains(path, "{") {
				want = append(want, "404")
			}
			if op.RequestBody != nil {
				want = append(want, "413")
			}
			for _, status := range want {
				require.Contains(t, op.Responses, status, "%s documents %s", where, status)
			}
		}
	}
}

// No schema types a member as [array, null] (the server answers []), and
// the closed sets of the responses are enums of the Go constants.
func TestOpenAPISchemasHaveEnumsAndNoNullArrays(t *testing.T) {
	t.Parallel()
	doc, raw := fetchConvDoc(t)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if types, ok := v["type"].([]any); ok {
				require.False(t, slices.Contains(types, "array") && slices.Contains(types, "null"), "%s is a nullable array", path)
			}
			for k, m := range v {
				walk(path+"/"+k, m)
			}
		case []any:
			for i, m := range v {
				walk(path+"/"+string(rune('0'+i%10)), m)
			}
		}
	}
	var whole map[string]any
	require.NoError(t, json.Unmarshal(raw, &whole))
	walk("", whole)

	member := func(schema, name string) map[string]any {
		s, ok := doc.Components.Schemas[schema].(map[string]any)
		require.True(t, ok, "schema %s", schema)
		p, ok := s["properties"].(map[string]any)[name].(map[string]any)
		require.True(t, ok, "%s.%s", schema, name)
		return p
	}
	strs := func(vs ...string) []any {
		out := make([]any, len(vs))
		for i, v := range vs {
			out[i] = v
		}
		return out
	}
	var kinds []string
	for _, k := range newTestServer().Config.Kinds {
		kinds = append(kinds, k.Name)
	}
	slices.Sort(kinds)
	var roles []string
	for _, r := range passport.Roles {
		roles = append(roles, string(r))
	}
	for _, c := range []struct {
		schema, member string
		values         []string
	}{
		{"Job", "status", bpctype.Statuses},
		{"Job", "type", kinds},
		{"BatchItem", "status", bpctype.Statuses},
		{"PassportVersion", "status", bpctype.PassportStatuses},
		{"Snapshot", "status", bpctype.SnapshotStatuses},
		{"DocumentVersion", "status", bpctype.DocumentVersionStatuses},
		{"Document", "kind", facts.Kinds},
		{"APIKey", "role", roles},
		{"CreatedKey", "role", roles},
		{"PassportExport", "format", []string{jobargs.ExportFormatJSON, jobargs.ExportFormatPDF}},
		{"RulePackageVersion", "status", bpctype.RuleVersionStatuses},
		{"RuleTestsRun", "status", bpctype.RuleTestsStatuses},
		{"WebhookDelivery", "status", bpctype.DeliveryStatuses},
		{"CircuitBreaker", "state", bpctype.BreakerStates},
	} {
		require.NotEmpty(t, c.values)
		require.Equal(t, strs(c.values...), member(c.schema, c.member)["enum"], "%s.%s", c.schema, c.member)
	}
	// The JSON members are typed objects with their members, not {}.
	for _, c := range []struct{ schema, member string }{
		{"Job", "last_error"}, {"RuleTestsRun", "first_failure"}, {"DocumentVersion", "error"},
	} {
		p := member(c.schema, c.member)
		require.Equal(t, []any{"object", "null"}, p["type"], "%s.%s", c.schema, c.member)
		require.NotEmpty(t, p["properties"], "%s.%s", c.schema, c.member)
	}
	require.Equal(t, "object", member("Job", "payload")["type"])
	require.Equal(t, "object", member("Fact", "payload")["type"])
	// Health's checks and verification's checks are snake_case.
	for _, name := range []string{"name", "ok", "detail"} {
		member("VerificationCheck", name)
		member("CheckResult", name)
	}
}

// No schema is named like a type a client generator derives from an
// operationId (oapi-codegen's <Op>Response clashed with the schema
// AppendEventResponse for appendEvent).
func TestSchemaNamesCannotClash(t *testing.T) {
	t.Parallel()
	doc, _ := fetchConvDoc(t)
	suffixes := []string{"Response", "Request", "Params", "JSONBody", "JSONRequestBody", "RequestObject", "ResponseObject",
		"Req", "Res", "OK", "Created", "Accepted", "NoContent", "Def", "Default", "Body"}
	for _, item := range doc.Paths {
		for _, op := range item {
			camel := camelCase(op.OperationID)
			for _, suffix := range suffixes {
				require.NotContains(t, doc.Components.Schemas, camel+suffix, "operation %s", op.OperationID)
			}
		}
	}
	for name := range doc.Components.Schemas {
		if name == "EnqueueRequest" { // no operation is called enqueue
			continue
		}
		require.False(t, strings.HasSuffix(name, "Request") || strings.HasSuffix(name, "Response"), "schema %s", name)
	}
}

// camelCase is an operationId as generators spell it: append-event →
// AppendEvent.
func camelCase(id string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(id, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// emptySlices answers every nil slice of a body as [] — nested in
// structs, pointers and slices — and leaves bytes (json.RawMessage) and
// the handler's own values as they were.
func TestEmptySlicesAnswersNoNullList(t *testing.T) {
	type inner struct {
		Names []string `json:"names"`
	}
	type body struct {
		Items  []inner          `json:"items"`
		Ptr    *inner           `json:"ptr"`
		Nested []inner          `json:"nested"`
		Raw    json.RawMessage  `json:"raw"`
		Hidden []string         `json:"-"`
		Map    map[string][]int `json:"map"`
	}
	orig := body{Ptr: &inner{}, Nested: []inner{{}, {Names: []string{"a"}}}}
	v, err := emptySlices(nil, "200", orig)
	require.NoError(t, err)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.JSONEq(t, `{"items":[],"ptr":{"names":[]},"nested":[{"names":[]},{"names":["a"]}],"raw":null,"map":null}`, string(b))
	require.Nil(t, orig.Ptr.Names, "the handler's value is not changed")
	require.Nil(t, orig.Nested[0].Names, "the handler's slice is not changed")
	require.Nil(t, orig.Items)

}
