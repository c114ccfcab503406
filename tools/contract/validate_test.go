package contract

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"

	"github.com/bpc-platform/bpc/internal/contract"
)

// validators of one document: full, and without body checks for the side
// of an exchange whose body was too large to record whole.
type validators struct {
	full, noRequestBody, noResponseBody validator.Validator
}

func newValidators(t *testing.T, name string, spec []byte) validators {
	t.Helper()
	mk := func(opts ...config.Option) validator.Validator {
		doc, err := libopenapi.NewDocument(spec)
		if err != nil {
			t.Fatalf("libopenapi cannot read %s: %v", name, err)
		}
		v, errs := validator.NewValidator(doc, append([]config.Option{config.WithFormatAssertions()}, opts...)...)
		if len(errs) > 0 {
			t.Fatalf("libopenapi-validator cannot use %s: %v", name, errs)
		}
		return v
	}
	return validators{
		full:           mk(),
		noRequestBody:  mk(config.WithoutRequestBodyValidation()),
		noResponseBody: mk(config.WithoutResponseBodyValidation()),
	}
}

// mismatch is one finding: where, and libopenapi-validator's reasons.
type mismatch struct {
	side, method, path string
	status             int
	test               string
	reasons            []string
}

func (m mismatch) String() string {
	return fmt.Sprintf("%s %s %s -> %d (%s):\n    %s", m.side, m.method, m.path, m.status, m.test, strings.Join(m.reasons, "\n    "))
}

func reasons(errs []*errors.ValidationError) []string {
	var out []string
	for _, e := range errs {
		s := e.Message
		if e.Reason != "" && e.Reason != e.Message {
			s += ": " + e.Reason
		}
		for _, se := range e.SchemaValidationErrors {
			loc := se.FieldPath
			if loc == "" {
				loc = se.KeywordLocation
			}
			s += fmt.Sprintf("\n      at %s: %s", loc, se.Reason)
		}
		out = append(out, s)
	}
	return out
}

// exchange rebuilds the request and response of e.
func exchange(t *testing.T, e *contract.Exchange) (*http.Request, *http.Response) {
	reqBody, err := contract.DecodeBody(e.RequestBody, e.RequestBodyEncoding)
	if err != nil {
		t.Fatalf("request body of %s %s: %v", e.Method, e.URL, err)
	}
	respBody, err := contract.DecodeBody(e.ResponseBody, e.ResponseBodyEncoding)
	if err != nil {
		t.Fatalf("response body of %s %s: %v", e.Method, e.URL, err)
	}
	host := e.Host
	if host == "" {
		host = "127.0.0.1"
	}
	u, err := url.Parse("http://" + host + e.URL)
	if err != nil {
		t.Fatalf("URL of %s %s: %v", e.Method, e.URL, err)
	}
	req := &http.Request{Method: e.Method, URL: u, Host: host, Header: e.RequestHeader,
		Body: io.NopCloser(bytes.NewReader(reqBody)), ContentLength: int64(len(reqBody))}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	resp := &http.Response{StatusCode: e.Status, Header: e.ResponseHeader, Request: req,
		Body: io.NopCloser(bytes.NewReader(respBody)), ContentLength: int64(len(respBody))}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	return req, resp
}

// Every recorded response, and every request answered 2xx, matches the
// served document as libopenapi-validator reads it. Requests answered
// otherwise are the suite's invalid input, sent on purpose.
func TestTrafficMatchesDocument(t *testing.T) {
	t.Parallel()
	r := traffic(t)
	vs := map[string]validators{}
	for _, name := range r.docNames() {
		vs[name] = newValidators(t, name, r.docs[name])
	}
	var found []mismatch
	requests, responses, unrouted, untyped := 0, 0, 0, 0
	for i := range r.exchanges {
		e := &r.exchanges[i]
		v := vs[e.Doc]
		path := e.URL
		if p, _, ok := strings.Cut(path, "?"); ok {
			path = p
		}
		// The server reads every request body as JSON whatever its
		// Content-Type (SPEC §17); the suite's own clients often send none.
		// Such a body is validated as the application/json it was read as.
		if e.RequestBody != "" && e.RequestHeader.Get("Content-Type") == "" {
			e.RequestHeader = e.RequestHeader.Clone()
			if e.RequestHeader == nil {
				e.RequestHeader = http.Header{}
			}
			e.RequestHeader.Set("Content-Type", "application/json")
			untyped++
		}
		if e.Status >= 200 && e.Status < 300 {
			req, _ := exchange(t, e)
			val := v.full
			if e.RequestBodyTruncated {
				val = v.noRequestBody
			}
			requests++
			if ok, errs := val.ValidateHttpRequestSync(req); !ok {
				found = append(found, mismatch{"request", e.Method, path, e.Status, e.Test, reasons(errs)})
			}
		}
		req, resp := exchange(t, e)
		val := v.full
		if e.ResponseBodyTruncated {
			val = v.noResponseBody
		}
		ok, errs := val.ValidateHttpResponse(req, resp)
		if !ok && outsideDocument(e.Status, errs) {
			// A route or method the document does not have, answered
			// 404/405: nothing here to validate it against
			// (internal/contract holds it to the error envelope).
			unrouted++
			continue
		}
		responses++
		if !ok {
			found = append(found, mismatch{"response", e.Method, path, e.Status, e.Test, reasons(errs)})
		}
	}
	t.Logf("libopenapi-validator: %d exchanges, %d requests (answered 2xx) and %d responses checked against %v; "+
		"%d answers to routes outside the document (404/405) not checked; %d request bodies sent without Content-Type "+
		"validated as application/json; %d mismatches",
		len(r.exchanges), requests, responses, r.docNames(), unrouted, untyped, len(found))
	if len(found) == 0 {
		return
	}
	// Grouped by what is wrong, so that a hundred calls of one broken
	// operation read as one finding with a count.
	groups := map[string][]mismatch{}
	for _, m := range found {
		key := m.side + " " + m.method + " " + templated(m.path) + " " + fmt.Sprint(m.status) + "\n    " + strings.Join(m.reasons, "\n    ")
		groups[key] = append(groups[key], m)
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		g := groups[k]
		fmt.Fprintf(&b, "\n%d× %s\n    e.g. %s %s (%s)\n", len(g), k, g[0].method, g[0].path, g[0].test)
	}
	t.Errorf("%d of the recorded exchanges do not match the served document (%d distinct findings):%s", len(found), len(groups), b.String())
}

// outsideDocument says whether errs only say that the request's path or
// method is not in the document, and the service answered so.
func outsideDocument(status int, errs []*errors.ValidationError) bool {
	if status != http.StatusNotFound && status != http.StatusMethodNotAllowed || len(errs) == 0 {
		return false
	}
	for _, e := range errs {
		if e.ValidationType != helpers.PathValidation ||
			e.ValidationSubType != helpers.ValidationMissing && e.ValidationSubType != helpers.ValidationMissingOperation {
			return false
		}
	}
	return true
}

// templated replaces uuid-like and numeric path segments by {id}, to group
// findings by operation.
func templated(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if len(p) == 36 && strings.Count(p, "-") == 4 || p != "" && strings.Trim(p, "0123456789") == "" {
			parts[i] = "{id}"
		}
	}
	return strings.Join(parts, "/")
}
