// Package contract validates every HTTP response a test produces against
// the OpenAPI 3.1 document the server itself serves at /v1/openapi.json.
//
//	v := contract.New(t, srv.Handler()) // fetch, parse and compile the document
//	h := v.Wrap(srv.Handler())          // serve the test through h
//
// A response that does not match fails the test (t.Errorf, so it is safe
// from server goroutines) with the request, status, body and reason:
// a path or method missing from the document, an undocumented status (a 2xx
// must be listed explicitly; errors may fall to "default"), a Content-Type
// the response does not list, a JSON body or a documented header that does
// not match its schema. Responses of unknown paths (chi 404/405) must be
// the error envelope (#/components/schemas/ErrorBody).
//
// Schemas are validated with santhosh-tekuri/jsonschema/v6 (JSON Schema
// 2020-12, the dialect of OpenAPI 3.1), formats asserted, over the served
// document itself, so $refs resolve exactly as a client would resolve them.
//
// Why this validator and not an OpenAPI library: kin-openapi validates 3.1
// documents but falls back to its OpenAPI 3.0 semantics for schemas with
// internal $refs and no 2020-12-only keyword (every schema Huma writes),
// where an unconstrained schema ({}) rejects null; libopenapi-validator
// works but brings a much larger dependency set. A JSON Schema 2020-12
// validator over the document itself is small and exact. It is used by
// tests only.
package contract

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SpecPath is where the server serves its document.
const SpecPath = "/v1/openapi.json"

const docURL = "mem:///openapi.json"

// unrouted are served outside the document (the document, its page).
var unrouted = map[string]bool{SpecPath: true, "/v1/docs": true}

// Ignore exempts paths with these prefixes (e.g. "/riverui/": a mounted UI
// that is not part of the API). Anything else not in the document fails.
func (v *Validator) Ignore(prefixes ...string) *Validator {
	v.mu.Lock()
	v.ignored = append(v.ignored, prefixes...)
	v.mu.Unlock()
	return v
}

func (v *Validator) isIgnored(path string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, p := range v.ignored {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

type route struct {
	template string
	re       *regexp.Regexp
	literal  int // literal characters: more specific templates win
	item     map[string]any
}

// Validator checks responses against one OpenAPI 3.1 document.
type Validator struct {
	t       testing.TB
	Doc     map[string]any
	routes  []route
	spec    []byte // the document as served, for the traffic recording
	docName string

	mu       sync.Mutex
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema
	seen     map[string]int // "METHOD template status" -> count
	ignored  []string
}

// New fetches the document from h and prepares the validator.
func New(t testing.TB, h http.Handler) *Validator {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, SpecPath, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("contract: GET %s: %d %s", SpecPath, rec.Code, rec.Body)
	}
	return newForTest(t, rec.Body.Bytes())
}

// newForTest prepares the validator of a document for t.
func newForTest(t testing.TB, spec []byte) *Validator {
	t.Helper()
	v, err := NewFromJSON(spec)
	if err != nil {
		t.Fatalf("contract: %v", err)
	}
	v.t = t
	return v
}

// NewFromJSON prepares a validator for a document (t is set by New).
func NewFromJSON(spec []byte) (*Validator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(spec))
	if err != nil {
		return nil, fmt.Errorf("%s is not JSON: %v", SpecPath, err)
	}
	root, ok := doc.(map[string]any)
	if !ok || !strings.HasPrefix(fmt.Sprint(root["openapi"]), "3.1.") {
		return nil, fmt.Errorf("%s is not an OpenAPI 3.1 document (openapi: %v)", SpecPath, root["openapi"])
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(docURL, doc); err != nil {
		return nil, err
	}
	v := &Validator{Doc: root, spec: spec, docName: docName(spec), compiler: c, schemas: map[string]*jsonschema.Schema{}, seen: map[string]int{}}
	paths, _ := root["paths"].(map[string]any)
	for tmpl, item := range paths {
		var re strings.Builder
		literal := 0
		re.WriteString("^")
		for _, part := range regexp.MustCompile(`\{[^}/]+\}|[^{]+`).FindAllString(tmpl, -1) {
			if strings.HasPrefix(part, "{") {
				re.WriteString(`[^/]+`)
			} else {
				re.WriteString(regexp.QuoteMeta(part))
				literal += len(part)
			}
		}
		re.WriteString("$")
		v.routes = append(v.routes, route{tmpl, regexp.MustCompile(re.String()), literal, item.(map[string]any)})
	}
	sort.Slice(v.routes, func(i, j int) bool { return v.routes[i].literal > v.routes[j].literal })
	// Every schema of the document must compile (catches broken $refs).
	for _, p := range []string{"#/components/schemas/ErrorBody"} {
		if _, err := v.schema(p); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Fetch reads the document a running service serves at base (such as
// http://127.0.0.1:8080) and prepares the validator.
func Fetch(t testing.TB, client *http.Client, base string) *Validator {
	t.Helper()
	resp, err := client.Get(base + SpecPath)
	if err != nil {
		t.Fatalf("contract: GET %s: %v", SpecPath, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("contract: GET %s: %d %s %v", SpecPath, resp.StatusCode, body, err)
	}
	return newForTest(t, body)
}

// Transport returns next with every response checked, for a client of a
// service that runs outside the test (another process, or a server whose
// handler the test cannot wrap). The body is read in full before the
// response is returned. Responses without X-Correlation-Id are not the
// service's handler's but net/http's own (a 431 for oversized headers, a
// 400 for a request line it cannot parse): they are outside the document
// and not checked.
func (v *Validator) Transport(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		v.CheckResponse(req, resp)
		return resp, nil
	})
}

// CheckResponse checks a response a client received; its body is read in
// full and replaced by a copy.
func (v *Validator) CheckResponse(req *http.Request, resp *http.Response) {
	if resp.Header.Get("X-Correlation-Id") == "" {
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return // the connection broke: nothing to check
	}
	if r := traffic(); r != nil && v.isRecorded(req.URL.EscapedPath()) {
		reqBody, cut := requestBody(req)
		v.recordExchange(r, req, reqBody, cut, resp.StatusCode, resp.Header, body)
	}
	if err := v.Check(req.Method, req.URL.EscapedPath(), resp.StatusCode, resp.Header, body); err != nil {
		v.t.Errorf("contract violation: %s %s -> %d\n  content-type: %q\n  body: %s\n  %v",
			req.Method, req.URL.RequestURI(), resp.StatusCode, resp.Header.Get("Content-Type"), snippet(body), err)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Wrap returns h with every response checked after it is written. The
// response still streams to the client; a copy is kept for the check.
func (v *Validator) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method, path := r.Method, r.URL.EscapedPath()
		tw := &teeWriter{ResponseWriter: w}
		rec := traffic()
		if rec != nil && !v.isRecorded(path) {
			rec = nil
		}
		var capture *captureBody
		var reqHeader http.Header
		if rec != nil {
			// What the handler sees, before it can change anything.
			reqHeader = r.Header.Clone()
			if r.Body != nil && r.Body != http.NoBody {
				capture = &captureBody{ReadCloser: r.Body}
				r.Body = capture
			}
		}
		h.ServeHTTP(tw, r)
		if tw.status == 0 {
			tw.status = http.StatusOK
			tw.header = w.Header().Clone()
		}
		if rec != nil {
			var reqBody []byte
			var cut bool
			if capture != nil {
				reqBody, cut = capture.finish()
			}
			sent := r.Clone(r.Context())
			sent.Header = reqHeader
			v.recordExchange(rec, sent, reqBody, cut, tw.status, tw.header, tw.body.Bytes())
		}
		if err := v.Check(method, path, tw.status, tw.header, tw.body.Bytes()); err != nil {
			v.t.Errorf("contract violation: %s %s -> %d\n  content-type: %q\n  body: %s\n  %v",
				method, r.URL.RequestURI(), tw.status, tw.header.Get("Content-Type"), snippet(tw.body.Bytes()), err)
		}
	})
}

// Check validates one response against the document.
func (v *Validator) Check(method, path string, status int, header http.Header, body []byte) error {
	if unrouted[path] || v.isIgnored(path) {
		return nil
	}
	head := method == http.MethodHead
	if head {
		method = http.MethodGet // served as GET; net/http drops the body
	}
	rt, op := v.find(method, path)
	if op == nil {
		if status < 400 {
			return fmt.Errorf("%s %s is not in the document but answered %d", method, path, status)
		}
		v.record("(unrouted)", status)
		if head {
			return nil
		}
		return v.checkJSON("#/components/schemas/ErrorBody", header, body)
	}
	v.record(method+" "+rt.template, status)
	responses, _ := op["responses"].(map[string]any)
	code := strconv.Itoa(status)
	resp, ok := responses[code].(map[string]any)
	if !ok {
		if status < 400 {
			return fmt.Errorf("status %d is not documented for %s %s", status, method, rt.template)
		}
		if resp, ok = responses["default"].(map[string]any); !ok {
			return fmt.Errorf("status %d is not documented (and no default) for %s %s", status, method, rt.template)
		}
		code = "default"
	}
	base := "#/paths/" + escape(rt.template) + "/" + strings.ToLower(method) + "/responses/" + code
	if err := v.checkHeaders(base, resp, header); err != nil {
		return err
	}
	content, _ := resp["content"].(map[string]any)
	if head || status == http.StatusNoContent || status == http.StatusNotModified {
		return nil
	}
	if len(content) == 0 {
		if len(body) > 0 {
			return fmt.Errorf("status %d documents no body, got %d bytes", status, len(body))
		}
		return nil
	}
	mt, _, err := mime.ParseMediaType(header.Get("Content-Type"))
	if err != nil {
		return fmt.Errorf("bad Content-Type %q: %v", header.Get("Content-Type"), err)
	}
	media, ok := content[mt].(map[string]any)
	if !ok {
		var listed []string
		for k := range content {
			listed = append(listed, k)
		}
		sort.Strings(listed)
		return fmt.Errorf("Content-Type %q is not documented for %d (documented: %s)", mt, status, strings.Join(listed, ", "))
	}
	if _, ok := media["schema"]; !ok || !isJSON(mt) {
		return nil // binary: the media type is the contract
	}
	return v.checkJSON(base+"/content/"+escape(mt)+"/schema", header, body)
}

func (v *Validator) checkHeaders(base string, resp map[string]any, header http.Header) error {
	hs, _ := resp["headers"].(map[string]any)
	for name, h := range hs {
		hm, _ := h.(map[string]any)
		vals := header.Values(name)
		if len(vals) == 0 {
			if req, _ := hm["required"].(bool); req {
				return fmt.Errorf("documented required header %s is missing", name)
			}
			continue
		}
		if _, ok := hm["schema"]; !ok {
			continue
		}
		sch, err := v.schema(base + "/headers/" + escape(name) + "/schema")
		if err != nil {
			return err
		}
		var val any = vals[0]
		if t, _ := hm["schema"].(map[string]any)["type"].(string); t == "integer" || t == "number" {
			val = jsonNumber(vals[0])
		}
		if err := sch.Validate(val); err != nil {
			return fmt.Errorf("header %s: %v", name, err)
		}
	}
	return nil
}

func (v *Validator) checkJSON(ptr string, header http.Header, body []byte) error {
	if mt, _, _ := mime.ParseMediaType(header.Get("Content-Type")); !isJSON(mt) {
		return fmt.Errorf("Content-Type %q, want JSON", header.Get("Content-Type"))
	}
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("body is not one JSON value: %v", err)
	}
	sch, err := v.schema(ptr)
	if err != nil {
		return err
	}
	if err := sch.Validate(value); err != nil {
		return fmt.Errorf("body does not match %s:\n%v", ptr, err)
	}
	return nil
}

func (v *Validator) schema(ptr string) (*jsonschema.Schema, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.schemas[ptr]; ok {
		return s, nil
	}
	s, err := v.compiler.Compile(docURL + ptr)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %v", ptr, err)
	}
	v.schemas[ptr] = s
	return s, nil
}

func (v *Validator) find(method, path string) (*route, map[string]any) {
	for i := range v.routes {
		if v.routes[i].re.MatchString(path) {
			op, _ := v.routes[i].item[strings.ToLower(method)].(map[string]any)
			if op != nil {
				return &v.routes[i], op
			}
		}
	}
	return nil, nil
}

func (v *Validator) record(key string, status int) {
	v.mu.Lock()
	v.seen[fmt.Sprintf("%s %d", key, status)]++
	v.mu.Unlock()
}

// Unexercised lists documented (operation, explicit status) pairs that no
// checked response produced: a coverage report for the contract suite.
func (v *Validator) Unexercised() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []string
	for _, rt := range v.routes {
		for method, op := range rt.item {
			om, _ := op.(map[string]any)
			rs, _ := om["responses"].(map[string]any)
			for status := range rs {
				key := strings.ToUpper(method) + " " + rt.template + " " + status
				if status != "default" && v.seen[key] == 0 {
					out = append(out, key)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func isJSON(mt string) bool { return mt == "application/json" || strings.HasSuffix(mt, "+json") }

// escape is a JSON pointer token, URI-fragment-encoded.
func escape(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	return strings.NewReplacer("{", "%7B", "}", "%7D", "%", "%25").Replace(s)
}

func jsonNumber(s string) any {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
	if err != nil {
		return s
	}
	return v
}

type teeWriter struct {
	http.ResponseWriter
	status int
	header http.Header
	body   bytes.Buffer
}

func (w *teeWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
		w.header = w.ResponseWriter.Header().Clone()
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func snippet(b []byte) string {
	s := strings.ToValidUTF8(string(b), "�")
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}
