package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/validation"
	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/http/access"
)

// Requests are read and checked by Huma from each typed operation's input
// type: its path, query and header parameters (typed: ID, integers with
// minimum/maximum, enums) and its Body. The document is generated from the
// same types, so a rule is written once, in a tag or a type's Schema, and
// the server and the document cannot disagree.
//
// What JSON Schema cannot say is checked here, once for every operation
// (checkRequest, a Huma middleware):
//   - the body is one JSON object (MALFORMED_JSON otherwise, with the
//     same messages as always), whatever its Content-Type, so that a
//     plain `curl -d` works; only application/json is documented;
//   - no string of the body (value or member name) holds NUL or invalid
//     UTF-8, and no number is beyond what Postgres stores (checkJSONText;
//     path, query and header text: checkRequestText);
//   - no query parameter an operation that reads some does not take
//     (SPEC §14): a misspelt filter would otherwise widen a list silently;
//     the message lists the operation's parameters;
//   - before any of that is validated, a platform-only operation refuses a
//     tenant key (platformOp), and a tenant key naming another tenant is
//     FORBIDDEN (otherTenant).
//
// The nil uuid is refused by ID's schema, wherever an id is taken.

// ID is a uuid a request names (a path or query parameter, a body
// member): 36 characters, never the nil uuid 00000000-0000-0000-0000-000000000000
// (a well-formed uuid no row ever has, most likely a zero value a client
// forgot to fill in).
type ID uuid.UUID

// nilUUID is the one uuid an ID cannot be.
const nilUUID = "00000000-0000-0000-0000-000000000000"

// msgNilUUID is Huma's message for a value matching a schema's not, which
// only ID's schema has.
const msgNilUUID = "must not be the nil uuid " + nilUUID

// UUID returns the id as a uuid.UUID.
func (id ID) UUID() uuid.UUID { return uuid.UUID(id) }

// IsZero says whether the id was not given (an optional parameter or
// member left out).
func (id ID) IsZero() bool { return uuid.UUID(id) == uuid.Nil }

// String returns the canonical form.
func (id ID) String() string { return uuid.UUID(id).String() }

// MarshalText writes the canonical form.
func (id ID) MarshalText() ([]byte, error) { return uuid.UUID(id).MarshalText() }

// UnmarshalText reads a uuid; the schema (format uuid, not nil) has been
// checked before, so a parameter's error names the rule the same way.
func (id *ID) UnmarshalText(b []byte) error {
	u, err := uuid.ParseBytes(b)
	if err != nil || len(b) != 36 {
		return errors.New(msgUUID)
	}
	*id = ID(u)
	return nil
}

// msgUUID is the message for anything that is not a uuid.
const msgUUID = "must be a uuid such as 3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f"

// Schema documents ID and is what Huma validates it against: the
// canonical form only (no braces, urn: prefix or 32 bare digits, which
// format uuid alone admits), and not the nil uuid.
func (ID) Schema(huma.Registry) *huma.Schema {
	s := &huma.Schema{Type: huma.TypeString, Format: "uuid",
		Pattern:            "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
		PatternDescription: strings.TrimPrefix(msgUUID, "must be "),
		Not:                &huma.Schema{Type: huma.TypeString, Enum: []any{nilUUID}}}
	s.PrecomputeMessages()
	return s
}

// ids converts a list of IDs.
func ids(in []ID) []uuid.UUID {
	out := make([]uuid.UUID, len(in))
	for i, id := range in {
		out[i] = id.UUID()
	}
	return out
}

func init() {
	// Huma's validation messages read like ours: the field is
	// details.field and the message's prefix, this is what follows.
	validation.MsgUnexpectedProperty = "unknown field"
	validation.MsgExpectedRFC3339DateTime = "must be an RFC 3339 time such as 2026-11-27T08:00:00Z"
	validation.MsgExpectedRFC4122UUID = msgUUID + "%.0v" // the parser's reason is not shown
	validation.MsgExpectedRFC3986URI = "must be a URI%.0v"
	validation.MsgExpectedRFC5322Email = "must be an email address%.0v"
	validation.MsgExpectedNotMatchSchema = msgNilUUID
	validation.MsgExpectedMatchAtLeastOneSchema = "matches none of the allowed shapes"
	validation.MsgExpectedMatchExactlyOneSchema = "matches none of the allowed shapes"
	validation.MsgExpectedBoolean = "must be a boolean"
	validation.MsgExpectedNumber = "must be a number"
	validation.MsgExpectedInteger = "must be an integer"
	validation.MsgExpectedString = "must be a string"
	validation.MsgExpectedArray = "must be an array"
	validation.MsgExpectedObject = "must be an object"
	validation.MsgExpectedArrayItemsUnique = "must not repeat an item"
	validation.MsgExpectedOneOf = "must be one of %s"
	validation.MsgExpectedMinimumNumber = "must be at least %v"
	validation.MsgExpectedExclusiveMinimumNumber = "must be greater than %v"
	validation.MsgExpectedMaximumNumber = "must be at most %v"
	validation.MsgExpectedExclusiveMaximumNumber = "must be less than %v"
	validation.MsgExpectedNumberBeMultipleOf = "must be a multiple of %v"
	validation.MsgExpectedMinLength = "must be at least %d characters"
	validation.MsgExpectedMaxLength = "must be at most %d characters"
	validation.MsgExpectedBePattern = "must be %s"
	validation.MsgExpectedMatchPattern = "must match the pattern %s"
	validation.MsgExpectedMinItems = "must hold at least %d items"
	validation.MsgExpectedMaxItems = "must hold at most %d items"
	validation.MsgExpectedMinProperties = "must have at least %d members"
	validation.MsgExpectedMaxProperties = "must have at most %d members"
	validation.MsgExpectedRequiredProperty = requiredPrefix + "%s"
	validation.MsgExpectedDependentRequiredProperty = "%s is required when %s is given"
	format := huma.ErrorFormatter
	huma.ErrorFormatter = func(f string, a ...any) string {
		if f == validation.MsgExpectedMinLength && len(a) == 1 && a[0] == 1 {
			return "must not be empty"
		}
		return format(f, a...)
	}
}

// requiredPrefix marks Huma's message for a missing member, which Huma
// reports at the object: humaError names the member instead.
const requiredPrefix = "is required: "

// checkRequest is the Huma middleware of every typed operation that checks
// what the schemas cannot (see the top of this file), then lets Huma bind
// and validate the input.
func checkRequest(api huma.API) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		op := ctx.Operation()
		if what, ok := op.Metadata[platformOnlyKey].(string); ok {
			if err := requirePlatform(ctx.Context(), what); err != nil {
				_ = huma.WriteErr(api, ctx, http.StatusForbidden, "", err)
				return
			}
		}
		if err := unknownQueryParam(ctx, op); err != nil {
			_ = huma.WriteErr(api, ctx, http.StatusUnprocessableEntity, "", err)
			return
		}
		if op.RequestBody == nil || op.RequestBody.Content["application/json"] == nil {
			next(ctx)
			return
		}
		var body []byte
		if r := ctx.BodyReader(); r != nil {
			var err error
			if body, err = io.ReadAll(r); err != nil {
				_ = huma.WriteErr(api, ctx, http.StatusBadRequest, "", decodeError(err))
				return
			}
		}
		if err := checkJSONBody(body); err != nil {
			_ = huma.WriteErr(api, ctx, http.StatusBadRequest, "", err)
			return
		}
		if err := otherTenant(ctx, body); err != nil {
			_ = huma.WriteErr(api, ctx, http.StatusForbidden, "", err)
			return
		}
		next(&bodyContext{humaContext: ctx, body: body})
	}
}

// otherTenant refuses a tenant key's request that names another tenant
// (tenant_id in the query or at the top of the body) before the rest of it
// is validated: what another tenant's request would need is none of the
// key's business. tenantOf answers the same later for what this cannot
// see (a batch's jobs).
func otherTenant(ctx huma.Context, body []byte) error {
	p, ok := access.FromContext(ctx.Context())
	if !ok || p.Platform {
		return nil
	}
	named := []string{ctx.Query("tenant_id")}
	var top struct {
		TenantID any `json:"tenant_id"`
	}
	if json.Unmarshal(body, &top) == nil {
		if s, ok := top.TenantID.(string); ok {
			named = append(named, s)
		}
	}
	for _, s := range named {
		if id, err := uuid.Parse(s); err == nil && len(s) == 36 {
			if _, err := p.Tenant(id); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkJSONBody refuses a body that is not one JSON object, or whose text
// Postgres would refuse.
func checkJSONBody(body []byte) error {
	// The common case without building the document: json.Valid is the
	// decoder's own scanner (one value, whitespace around it), allocating
	// nothing, where decoding into any cost a map and a string per member
	// on every request. Anything else is decoded for its error message.
	if json.Valid(body) && body[firstNonSpace(body)] == '{' {
		return checkJSONText(body)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return decodeError(err)
	}
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return errcode.New(codeMalformedJSON, "request body must hold exactly one JSON value")
	}
	if _, ok := v.(map[string]any); !ok {
		return errcode.New(codeMalformedJSON, "request body must be a JSON object")
	}
	return checkJSONText(body)
}

// firstNonSpace returns the index of the first byte of body that is not
// JSON whitespace (len(body)-1 when all are: never out of range for a
// valid document).
func firstNonSpace(body []byte) int {
	for i, c := range body {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return i
		}
	}
	return len(body) - 1
}

// bodyContext is a request whose body has been read (checkRequest): Huma
// reads it again from memory, as JSON whatever the Content-Type said.
type bodyContext struct {
	humaContext
	body []byte
}

// humaContext names the embedded huma.Context (its method Context would
// clash with a field of that name).
type humaContext = huma.Context

func (c *bodyContext) BodyReader() io.Reader { return bytes.NewReader(c.body) }

// SetReadDeadline does nothing: the body has been read.
func (c *bodyContext) SetReadDeadline(time.Time) error { return nil }

func (c *bodyContext) Header(name string) string {
	if strings.EqualFold(name, "Content-Type") {
		return "application/json"
	}
	return c.humaContext.Header(name)
}

// queryAliases are the deprecated spellings of query parameters, accepted
// where their parameter is (an input field with hidden:"true" reads them)
// and not documented.
var queryAliases = map[string]string{"waitMs": "wait_ms"}

// unknownQueryParam returns a VALIDATION_ERROR naming the first query
// parameter of the request that op does not take, and listing those it
// takes. An operation that takes no query parameter ignores the query, as
// it always has: only where parameters select or filter would a misspelt
// one silently change the answer.
func unknownQueryParam(ctx huma.Context, op *huma.Operation) error {
	known := map[string]bool{}
	for _, p := range op.Parameters {
		if p.In == "query" {
			known[p.Name] = true
		}
	}
	if len(known) == 0 {
		return nil
	}
	u := ctx.URL()
	for _, name := range slices.Sorted(maps.Keys(u.Query())) {
		if !known[name] && !known[queryAliases[name]] {
			return errcode.Invalid(name, "is not a query parameter of this route; it takes %s",
				strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		}
	}
	return nil
}

// precomputeTree prepares a hand-built request schema, and those it
// references, for Huma's validator (huma.Schema.PrecomputeMessages: its
// property list, compiled pattern and messages), as the registry does for
// the schemas it builds from types. Without it an object's properties are
// not checked.
func precomputeTree(reg huma.Registry, s *huma.Schema) {
	seen := map[*huma.Schema]bool{}
	var walk func(s *huma.Schema)
	walk = func(s *huma.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		if s.Ref != "" {
			walk(reg.SchemaFromRef(s.Ref))
			return
		}
		s.PrecomputeMessages()
		for _, p := range s.Properties {
			walk(p)
		}
		walk(s.Items)
		for _, list := range [][]*huma.Schema{s.OneOf, s.AnyOf, s.AllOf} {
			for _, sub := range list {
				walk(sub)
			}
		}
		walk(s.Not)
	}
	walk(s)
}

// platformOnlyKey marks, in an operation's Metadata, an operation only the
// platform token may call (platformOp); checkRequest refuses anyone else
// before reading the request.
const platformOnlyKey = "bpc-platform-only"

// platformOp marks an operation as the platform token's only; what names
// it in the error.
func platformOp(what string) opt {
	return func(_ huma.Registry, o *huma.Operation) {
		if o.Metadata == nil {
			o.Metadata = map[string]any{}
		}
		o.Metadata[platformOnlyKey] = what
	}
}

// enumParam makes the GET operation at path take only values for its
// query parameter name: the closed sets a tag cannot list (the job types
// are the server's configuration). The document's parameter schema is the
// one Huma validates the parameter against.
func enumParam(doc *huma.OpenAPI, path, name string, values []string) {
	op := doc.Paths[path].Get
	for _, p := range op.Parameters {
		if p.In == "query" && p.Name == name {
			p.Schema.Enum = nil
			for _, v := range values {
				p.Schema.Enum = append(p.Schema.Enum, v)
			}
			p.Schema.PrecomputeMessages()
			return
		}
	}
	panic(fmt.Sprintf("GET %s has no query parameter %s", path, name))
}
