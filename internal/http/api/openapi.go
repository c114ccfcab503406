package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
)

// The OpenAPI 3.1 document is built by Huma (github.com/danielgtaylor/huma/v2)
// from the Go types each route declares: its parameters struct (path, query
// and header tags), its JSON request body type and one type per response
// status. Huma's schema registry turns those types into JSON Schema
// 2020-12, so a field added to a response type appears in the document, and
// the contract tests (internal/contract) fail on any response the document
// does not describe.
//
// What is derived from the types and what is hand-written:
//   - derived: the document (paths, parameters, request and response
//     schemas, required members, enums and bounds from struct tags) and the
//     per-kind payload schemas of the enqueue requests (from the registry's
//     args types, see kindSchemas);
//   - also derived: request binding and validation. Huma reads and
//     validates every input from the same types the document is made of
//     (register), and checkRequest (request.go) adds, once for every
//     operation, what JSON Schema cannot say (one JSON object whatever the
//     Content-Type, no NUL or invalid UTF-8, no unknown query parameter).
//     The domain's own checks (passport) still run in the handlers.
//
// Routing stays chi, with the same middleware, route patterns (the metrics
// labels) and 404/405. Every /v1 route but /v1/metrics is a typed
// operation (register: huma.Register through the humachi adapter; the
// handler takes its input type and returns its output type or an error);
// /v1/metrics is Prometheus' own handler, documented as text/plain
// (handle). Both write into the one document.
//
// Why Huma: its schema registry maps Go types to JSON Schema 2020-12 (the
// dialect of OpenAPI 3.1) with struct tags for what a type cannot say, and
// its OpenAPI model marshals the document; at run time it adds no
// middleware and no routes. Its own docs page loads from a CDN, so /v1/docs
// is rendered here (docs.go).

// ErrorBody is the error envelope every failure answers with. It is also
// what Huma's error constructors return (huma.go), so Huma documents it as
// the schema of error responses. The Go field cannot be called Error (it
// would clash with the Error method).
type ErrorBody struct {
	Err    ErrorDetail `json:"error"`
	status int
}

// Error returns the code and message.
func (e *ErrorBody) Error() string { return string(e.Err.Code) + ": " + e.Err.Message }

// retryAfter is the Retry-After of a 429 or 503: the error's
// retry_after_seconds when it knows how long (a rate limit's reservation),
// else 1.
func (e *ErrorBody) retryAfter() string {
	if secs, ok := e.Err.Details["retry_after_seconds"].(int); ok && secs > 0 {
		return strconv.Itoa(secs)
	}
	return "1"
}

// GetStatus returns the HTTP status of the error (huma.StatusError).
func (e *ErrorBody) GetStatus() int { return e.status }

// ErrorDetail is the content of the error envelope.
type ErrorDetail struct {
	Code          errcode.Code   `json:"code" doc:"Error code (SPEC §4, plus MALFORMED_JSON and METHOD_NOT_ALLOWED)." example:"VALIDATION_ERROR"`
	Message       string         `json:"message" doc:"One-line human-readable message."`
	CorrelationID string         `json:"correlation_id" minLength:"1" doc:"Echo of X-Correlation-Id; quote it when reporting a problem."`
	Details       map[string]any `json:"details" doc:"Structured context, e.g. {\"field\":\"tenant_id\"}; {} when none."`
}

// SpecPath is where the service serves its OpenAPI document.
const SpecPath = "/v1/openapi.json"

// DocsPath is where the service serves the document as a reference page.
const DocsPath = "/v1/docs"

// newOpenAPI returns an empty document with its info, servers, tags, the
// bearer scheme and the error envelope.
func newOpenAPI() *huma.OpenAPI {
	reg := huma.NewMapRegistry("#/components/schemas/", schemaNamer)
	reg.Schema(reflect.TypeFor[ErrorBody](), true, "")
	return &huma.OpenAPI{
		OpenAPI: "3.1.0",
		Info: &huma.Info{
			Title:   "BPC admin API",
			Version: "v1",
			Description: "The BPC job service: background jobs (River on Postgres) with tenants, API keys, " +
				"an audit log, webhooks and the battery passport domain (documents, facts, snapshots, " +
				"rule packages, passports), and the public verification of published passports.\n\n" +
				"Every request but health and public verification carries `Authorization: Bearer <token>`: " +
				"the platform operator's BPC_ADMIN_TOKEN or a tenant API key (`bpc_<prefix>_<secret>`). " +
				"Members are snake_case; lists are `{\"items\": [...]}` and never null. " +
				"Every error is `{\"error\":{\"code\",\"message\",\"correlation_id\",\"details\"}}` " +
				"and every response carries `X-Correlation-Id`; 429 and 503 carry `Retry-After`.",
			Contact: &huma.Contact{Name: "BPC platform team", URL: "https://github.com/bpc-platform/bpc"},
			License: &huma.License{Name: "Proprietary", URL: "https://github.com/bpc-platform/bpc"},
		},
		// Relative: the document is served by the API it describes, so
		// tools resolve the paths against wherever they fetched it.
		Servers: []*huma.Server{{URL: "/", Description: "The service that serves this document"}},
		Tags:    docTags,
		Components: &huma.Components{
			Schemas: reg,
			SecuritySchemes: map[string]*huma.SecurityScheme{
				"bearerAuth": {Type: "http", Scheme: "bearer", Description: "`Authorization: Bearer <token>`, where the token is " +
					"either the platform operator's BPC_ADMIN_TOKEN (every tenant, every route; names the tenant with tenant_id) " +
					"or a tenant API key `bpc_<prefix>_<secret>` from POST /v1/api-keys (its own tenant only, implied; " +
					"role admin, writer or reader). Missing, unknown, expired or revoked tokens are 401."},
			},
		},
	}
}

// opt adds to an operation's documentation.
type opt func(reg huma.Registry, o *huma.Operation)

// routes registers the routes of one chi router (with its middleware) and
// documents each in one document: typed operations through api (register),
// handlers that keep the http.HandlerFunc shape through handle.
type routes struct {
	r   chi.Router
	api huma.API
	doc *huma.OpenAPI
	// public marks the operations that need no bearer token.
	public bool
}

// operation documents a route: id and summary, then the opts (parameters,
// request body, responses), then what opDocs says of the id: its tag,
// description and error responses, each with the error envelope and its
// headers; the bearer token unless public (security: [] when public).
func (rs routes) operation(method, path, id, summary string, opts ...opt) *huma.Operation {
	reg := rs.doc.Components.Schemas
	o := &huma.Operation{
		OperationID: id, Method: method, Path: path, Summary: summary,
		Responses: map[string]*huma.Response{
			"default": errorResponse(reg, "Any other error (the error envelope): 400, 405, 500, 503…", false),
		},
	}
	if rs.public {
		o.Security = []map[string][]string{} // explicitly none
	} else {
		o.Security = []map[string][]string{{"bearerAuth": {}}}
	}
	for _, f := range opts {
		f(reg, o)
	}
	d, ok := opDocs[id]
	if !ok {
		return o // TestEveryOperationHasItsDocs fails
	}
	o.Tags = []string{d.tag}
	o.Description = d.description(method, o.Description)
	for _, status := range d.errorStatuses(o) {
		desc := errorText[status]
		if status == http.StatusConflict {
			desc = "Conflict: " + d.conflict
		}
		retry := status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
		key := strconv.Itoa(status)
		if r, ok := o.Responses[key]; ok && r.Content["application/json"] != nil {
			continue // the route documents this status itself (ready's 503)
		}
		o.Responses[key] = errorResponse(reg, desc, retry)
		if rs.public && publicPage(path) && status != http.StatusTooManyRequests {
			// A browser (Accept: text/html) gets the page instead.
			o.Responses[key].Content["text/html"] = &huma.MediaType{Schema: &huma.Schema{Type: huma.TypeString}}
		}
	}
	for _, r := range o.Responses {
		if r.Headers == nil {
			r.Headers = map[string]*huma.Header{}
		}
		if r.Headers[HeaderCorrelationID] == nil {
			r.Headers[HeaderCorrelationID] = correlationHeader()
		}
	}
	return o
}

// errorResponse is a response with the error envelope, its correlation id
// header and, for 429 and 503, Retry-After.
func errorResponse(reg huma.Registry, desc string, retry bool) *huma.Response {
	r := &huma.Response{Description: desc,
		Headers: map[string]*huma.Header{HeaderCorrelationID: correlationHeader()},
		Content: map[string]*huma.MediaType{
			"application/json": {Schema: reg.Schema(reflect.TypeFor[ErrorBody](), true, "")},
		}}
	if retry {
		r.Headers["Retry-After"] = retryAfterHeader()
	}
	return r
}

func correlationHeader() *huma.Header {
	return &huma.Header{Required: true, Description: "The request's X-Correlation-Id if it sent a valid one, else a new UUID; " +
		"the error envelope's correlation_id.", Schema: &huma.Schema{Type: huma.TypeString, MinLength: ptr(1)}}
}

func retryAfterHeader() *huma.Header {
	return &huma.Header{Required: true, Description: "Seconds to wait before retrying.",
		Schema: &huma.Schema{Type: huma.TypeString, Pattern: "^[0-9]+$"}}
}

// handle routes method path to h and documents it (operation).
func (rs routes) handle(method, path, id, summary string, h http.HandlerFunc, opts ...opt) {
	o := rs.operation(method, path, id, summary, opts...)
	if !slices.ContainsFunc(slices.Collect(maps.Keys(o.Responses)), func(k string) bool { return k[0] == '2' }) {
		panic(fmt.Sprintf("%s %s documents no success response", method, path))
	}
	rs.doc.AddOperation(o)
	rs.r.Method(method, path, h)
}

// register routes a typed operation: Huma reads its input I (parameters
// and Body) from the request and validates it against the schemas of its
// types (request.go says what else is checked, once for every operation),
// calls h and writes its output O (Status, headers, Body), and documents
// both from the types and the opts (operation). The body limit is the
// server's MaxBodyBytes, which limitBody enforces before Huma reads (so
// Huma's own 1 MiB is off).
func register[I, O any](rs routes, method, path, id, summary string, h func(context.Context, *I) (*O, error), opts ...opt) {
	o := rs.operation(method, path, id, summary, opts...)
	o.MaxBodyBytes = -1
	huma.Register(rs.api, *o, h)
}

// jsonBody documents T as the required JSON request body.
func jsonBody[T any](reg huma.Registry, o *huma.Operation) {
	o.RequestBody = &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
		"application/json": {Schema: reg.Schema(reflect.TypeFor[T](), true, "")},
	}}
}

// bodySchema documents s as the required JSON request body, which Huma
// validates requests against.
func bodySchema(s *huma.Schema) opt {
	return func(reg huma.Registry, o *huma.Operation) {
		precomputeTree(reg, s)
		o.RequestBody = &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
			"application/json": {Schema: s},
		}}
	}
}

// responds documents a status answered with a JSON body of type T and the
// named headers.
func responds[T any](status int, desc string, headers ...string) opt {
	return func(reg huma.Registry, o *huma.Operation) {
		r := &huma.Response{Description: desc, Content: map[string]*huma.MediaType{
			"application/json": {Schema: reg.Schema(reflect.TypeFor[T](), true, "")},
		}}
		for _, h := range headers {
			if r.Headers == nil {
				r.Headers = map[string]*huma.Header{}
			}
			r.Headers[h] = &huma.Header{Schema: &huma.Schema{Type: huma.TypeString}}
			if h == "Retry-After" {
				r.Headers[h] = retryAfterHeader()
			}
		}
		o.Responses[fmt.Sprint(status)] = r
		if o.DefaultStatus == 0 {
			o.DefaultStatus = status // a typed operation's status when its output sets none
		}
	}
}

// raw documents a 200 whose body is served as stored, with one of the
// content types.
func raw(desc string, contentTypes ...string) opt {
	return func(_ huma.Registry, o *huma.Operation) {
		r := &huma.Response{Description: desc, Content: map[string]*huma.MediaType{}}
		for _, ct := range contentTypes {
			// Binary bodies have no schema (OpenAPI 3.1: the media type
			// says it all); Huma would write format binary as
			// contentMediaType application/octet-stream.
			var schema *huma.Schema
			if ct == "application/json" {
				// A JSON object (payload, proof, receipt, export),
				// bytes as stored.
				schema = &huma.Schema{Type: huma.TypeObject}
			}
			r.Content[ct] = &huma.MediaType{Schema: schema}
		}
		o.Responses["200"] = r
	}
}

// noContent documents a 204 without a body.
func noContent(desc string) opt {
	return func(_ huma.Registry, o *huma.Operation) {
		o.Responses["204"] = &huma.Response{Description: desc}
		o.DefaultStatus = http.StatusNoContent
	}
}

// describe adds a description (markdown) to the operation.
func describe(text string) opt {
	return func(_ huma.Registry, o *huma.Operation) { o.Description = text }
}

// spec serves the document and its reference page, marshalled once after
// every route is registered.
type spec struct {
	doc  *huma.OpenAPI
	once sync.Once
	json []byte
	html []byte
}

func (sp *spec) build() {
	sp.once.Do(func() {
		refineSchemas(sp.doc.Components.Schemas)
		addExamples(sp.doc) // examples.go
		b, err := json.Marshal(sp.doc)
		if err != nil {
			panic(fmt.Sprintf("error marshalling the OpenAPI document: %v", err))
		}
		sp.json = extensionKeywords(b)
		sp.html = renderDocs(sp.doc)
	})
}

// extensionKeywords renames the schema keywords Huma writes that are
// neither JSON Schema nor OpenAPI to the x- extensions tools accept:
// patternDescription (the human reading of a pattern, which Huma's
// validator quotes in its messages) becomes x-pattern-description. Redocly
// refuses the bare keyword as an error. The document is JSON text, so the
// member name can only appear quoted and followed by a colon.
func extensionKeywords(doc []byte) []byte {
	return bytes.ReplaceAll(doc, []byte(`"patternDescription":`), []byte(`"x-pattern-description":`))
}

func (sp *spec) serveJSON(w http.ResponseWriter, r *http.Request) {
	sp.build()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(sp.json)
}

func (sp *spec) serveHTML(w http.ResponseWriter, r *http.Request) {
	sp.build()
	w.Header().Set("Content-Security-Policy", docsCSP) // replaces secureHeaders' default-src 'none'
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(sp.html)
}

// refineSchemas corrects what Huma's reflection cannot see in the
// registered struct schemas: the enums and JSON shapes of memberRefinements
// (schemas.go), a uuid.UUID member gets format uuid (Huma
// documents a text-marshalled type as a bare string), and a pointer member
// without omitempty, which marshals null when nil, is nullable (Huma makes
// a pointer to a struct a bare $ref, and a pointer to a uuid.UUID not
// nullable).
func refineSchemas(reg huma.Registry) {
	for name, s := range reg.Map() {
		t := reg.TypeFromRef("#/components/schemas/" + name)
		if t != nil && t.Kind() == reflect.Struct {
			refineMembers(reg, s, t)
		}
	}
}

var uuidType = reflect.TypeFor[uuid.UUID]()

func refineMembers(reg huma.Registry, s *huma.Schema, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			refineMembers(reg, s, ft) // embedded: its members are the struct's
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := s.Properties[name]
		if p == nil || name == "-" {
			continue
		}
		switch {
		case ft == uuidType && p.Format == "":
			p.Format = "uuid"
		case ft.Kind() == reflect.Slice && ft.Elem() == uuidType && p.Items != nil && p.Items.Format == "":
			p.Items.Format = "uuid"
		}
		if r := memberRefinements[t][name]; r != nil {
			p = r(reg, p)
			s.Properties[name] = p
		}
		if f.Type.Kind() != reflect.Pointer || strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
			continue
		}
		if p.Ref != "" {
			s.Properties[name] = &huma.Schema{Description: p.Description,
				AnyOf: []*huma.Schema{{Ref: p.Ref}, {Type: "null"}}}
		} else if p.Type != "" {
			p.Nullable = true
		}
	}
}

// kindSchemas registers, for each job kind, the schema of its payload
// (from its args type) and of an enqueue request of that kind, and returns
// the schema of an enqueue request of any kind: a oneOf over them with a
// discriminator on "type". Adding a kind to the registry adds it here.
func kindSchemas(reg huma.Registry, kinds []jobargs.Kind) *huma.Schema {
	const name = "EnqueueRequest"
	if s, ok := reg.Map()[name]; ok && s != nil {
		return &huma.Schema{Ref: "#/components/schemas/" + name}
	}
	common := map[string]*huma.Schema{}
	t := reflect.TypeFor[enqueueRequest]()
	for i := range t.NumField() {
		f := t.Field(i)
		member, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if member == "type" || member == "payload" {
			continue
		}
		common[member] = huma.SchemaFromField(reg, f, "")
	}
	union := &huma.Schema{
		Description:   "A job to enqueue; its type decides the payload's schema.",
		Discriminator: &huma.Discriminator{PropertyName: "type", Mapping: map[string]string{}},
	}
	sorted := slices.Clone(kinds)
	slices.SortFunc(sorted, func(a, b jobargs.Kind) int { return strings.Compare(a.Name, b.Name) })
	for _, k := range sorted {
		argsType := reflect.TypeOf(k.New()).Elem()
		payloadRef := reg.Schema(argsType, true, "")
		payload := reg.SchemaFromRef(payloadRef.Ref)
		if payload == nil {
			panic(fmt.Sprintf("kind %s: args type %s has no schema", k.Name, argsType))
		}
		payload.Description = k.Summary + " (payload of " + k.Name + ")"
		// The request's tenant_id fills the payload's; it may be omitted.
		payload.Required = slices.DeleteFunc(slices.Clone(payload.Required), func(m string) bool { return m == "tenant_id" })
		props := map[string]*huma.Schema{
			"type":    {Type: huma.TypeString, Enum: []any{k.Name}, Description: k.Summary},
			"payload": {Ref: payloadRef.Ref, Description: "Job arguments of " + k.Name + "."},
		}
		for m, s := range common {
			props[m] = s
		}
		reqName := "Enqueue" + strings.TrimSuffix(argsType.Name(), "Args")
		reg.Map()[reqName] = &huma.Schema{
			Type: huma.TypeObject, Title: k.Name, Description: k.Summary,
			Properties: props, Required: []string{"type"}, // tenant_id: the platform names it, a key implies it
			AdditionalProperties: false,
		}
		ref := "#/components/schemas/" + reqName
		union.OneOf = append(union.OneOf, &huma.Schema{Ref: ref})
		union.Discriminator.Mapping[k.Name] = ref
	}
	reg.Map()[name] = union
	return &huma.Schema{Ref: "#/components/schemas/" + name}
}

// kindsDescription lists the job types with their summaries, for the
// enqueue operations' descriptions.
func kindsDescription(kinds []jobargs.Kind) string {
	var b strings.Builder
	b.WriteString("The job's type decides its payload (see the EnqueueRequest schema's oneOf). Job types:\n")
	sorted := slices.Clone(kinds)
	slices.SortFunc(sorted, func(a, b jobargs.Kind) int { return strings.Compare(a.Name, b.Name) })
	for _, k := range sorted {
		fmt.Fprintf(&b, "\n- %s: %s", k.Name, k.Summary)
	}
	return b.String()
}

// canonicalQuery re-encodes the query string from url.Values, so that
// every reader of the query (checkRequestText, the handlers, any parser
// that does not drop pairs with ';' as net/url does) sees the same values.
func canonicalQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "" {
			r.URL.RawQuery = r.URL.Query().Encode()
		}
		next.ServeHTTP(w, r)
	})
}

// schemaNames are the schema names of types whose own name says too little
// in a document of many packages (package path and type name → name).
var schemaNames = map[string]string{
	"github.com/bpc-platform/bpc/internal/webhook/breaker.View": "CircuitBreaker",
	"github.com/bpc-platform/bpc/internal/http/public.Product":  "PublicProduct",
	"github.com/bpc-platform/bpc/core/verify.Check":             "VerificationCheck",
}

// schemaNamer names the registered schemas as Huma does (the type's name,
// generic arguments appended), with three changes so that no schema can
// clash with the per-operation types client generators derive from an
// operationId (oapi-codegen: <Op>Response, <Op>Params, <Op>JSONBody,
// <Op>JSONRequestBody, <Op>RequestObject; ogen: <Op>Req, <Op>Res,
// <Op>OK…): a name ending in Request ends in Input instead, one ending in
// Response in Result, and the {"items": [...]} lists are <T>List
// (items[bpctype.Job] → JobList). TestSchemaNamesCannotClash holds them to
// it.
func schemaNamer(t reflect.Type, hint string) string {
	d := t
	for d.Kind() == reflect.Pointer {
		d = d.Elem()
	}
	if n, ok := schemaNames[d.PkgPath()+"."+d.Name()]; ok {
		return n
	}
	name := huma.DefaultSchemaNamer(t, hint)
	if d.PkgPath() == reflect.TypeFor[items[int]]().PkgPath() && strings.HasPrefix(d.Name(), "items[") {
		name = strings.TrimPrefix(name, "Items") + "List"
	}
	if base, ok := strings.CutSuffix(name, "Request"); ok {
		name = base + "Input"
	} else if base, ok := strings.CutSuffix(name, "Response"); ok {
		name = base + "Result"
	}
	return name
}
