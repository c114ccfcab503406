package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/danielgtaylor/huma/v2/validation"
	"github.com/go-chi/chi/v5"

	"github.com/bpc-platform/bpc/core/errcode"
)

// Typed operations: a route registered with huma.Register declares its
// input (parameters and Body in one struct) and output (Status, headers
// and Body) as Go types; Huma reads and validates the input, writes the
// output, and documents both (request.go: what else is checked).

// serverKey carries the *Server in a typed operation's context, for the
// error constructors (its logger and body limit).
type serverKey struct{}

// newAPI returns a Huma API over r that writes its operations into doc.
// It is not huma.DefaultConfig: that adds a $schema member to every object
// response and a Link header, and serves its own document, schema and
// CDN-loaded docs routes.
func (s *Server) newAPI(r chi.Router, doc *huma.OpenAPI) huma.API {
	cfg := huma.Config{
		OpenAPI: doc,
		// The encoder of writeJSON: SetEscapeHTML(false), one value and a
		// newline, so typed and untyped routes answer the same bytes
		// (jsonFormat writes jobs faster, to the same bytes).
		Formats:       map[string]huma.Format{"application/json": jsonFormat},
		DefaultFormat: "application/json",
		Transformers:  []huma.Transformer{completeErrorBody, emptySlices},
	}
	api := humachi.New(r, cfg)
	api.UseMiddleware(func(ctx huma.Context, next func(huma.Context)) {
		next(huma.WithValue(ctx, serverKey{}, s))
	}, checkRequest(api))
	return api
}

// completeErrorBody adds the correlation id to an error a handler built
// without the request (a huma.StatusError such as huma.Error404NotFound),
// which Huma writes without calling NewErrorWithContext, and sets
// Retry-After on 429 and 503 and Cache-Control: no-store as writeError does.
func completeErrorBody(ctx huma.Context, _ string, v any) (any, error) {
	if e, ok := v.(*ErrorBody); ok {
		ctx.SetHeader("Cache-Control", "no-store")
		if e.Err.CorrelationID == "" {
			c := *e // may be shared: never mutate it
			c.Err.CorrelationID = correlationID(ctx.Context())
			v = &c
		}
		if e.status == http.StatusTooManyRequests || e.status == http.StatusServiceUnavailable {
			ctx.SetHeader("Retry-After", e.retryAfter())
		}
		if s, _ := ctx.Context().Value(serverKey{}).(*Server); s != nil {
			s.countQuotaRefusal(e)
		}
	}
	return v, nil
}

// countQuotaRefusal counts an answer that refuses a request for a tenant
// quota (QUOTA_EXCEEDED, or an event payload over its quota) by the
// quota's name, which the error's details carry.
func (s *Server) countQuotaRefusal(e *ErrorBody) {
	if quota, ok := e.Err.Details["quota"].(string); ok && (e.Err.Code == errcode.QuotaExceeded || e.Err.Code == errcode.PayloadTooLarge) {
		s.Access.CountQuotaRefusal(quota)
	}
}

func init() {
	// Process-global: every error Huma produces, and the schema it
	// documents for errors, is our envelope with our status table.
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		return errorEnvelope(context.Background(), nil, humaError(status, msg, 0, errs))
	}
	huma.NewErrorWithContext = func(hctx huma.Context, status int, msg string, errs ...error) huma.StatusError {
		if hctx == nil {
			return huma.NewError(status, msg, errs...)
		}
		ctx := hctx.Context()
		s, _ := ctx.Value(serverKey{}).(*Server)
		var logger *slog.Logger
		var limit int64
		if s != nil {
			logger, limit = s.Logger, s.Config.MaxBodyBytes
		}
		return errorEnvelope(ctx, logger, humaError(status, msg, limit, errs))
	}
}

// humaError maps what Huma reports to an error of ours:
//   - a handler's error (Huma passes it as the only error, status 500):
//     itself, so the status table decides;
//   - a body read that hit limitBody (*http.MaxBytesError), or a 413: 413
//     BODY_TOO_LARGE naming the limit;
//   - 400 (unreadable or empty body) and 415: MALFORMED_JSON;
//   - 422 (a parameter or body Huma validated): VALIDATION_ERROR naming
//     the first field (fieldError): a value given wrong before a member
//     left out, and either before the summary of a oneOf that matched
//     nothing;
//   - 401/403/404/409/429/503 (huma.Error404NotFound and friends): the
//     matching code;
//   - anything else: INTERNAL_ERROR.
func humaError(status int, msg string, limit int64, errs []error) error {
	for _, err := range errs {
		var maxErr *http.MaxBytesError
		if errors.As(err, &maxErr) {
			limit, status = maxErr.Limit, http.StatusRequestEntityTooLarge
			break
		}
		if err != nil && status == http.StatusInternalServerError {
			return err // a handler's error: errorEnvelope maps it
		}
		if e := errcode.As(err); e != nil {
			return e
		}
	}
	first := func() (field, message string) {
		var details []*huma.ErrorDetail
		for _, err := range errs {
			var d *huma.ErrorDetail
			if errors.As(err, &d) {
				details = append(details, d)
				continue
			}
			if err != nil && len(details) == 0 {
				return "", err.Error()
			}
		}
		if len(details) == 0 {
			return "", msg
		}
		// A value the request gave wrong before a member it left out,
		// and either before the summary of a oneOf.
		rank := func(d *huma.ErrorDetail) int {
			switch {
			case d.Message == validation.MsgExpectedMatchExactlyOneSchema:
				return 2
			case strings.HasPrefix(d.Message, requiredPrefix):
				return 1
			}
			return 0
		}
		pick := slices.MinFunc(details, func(a, b *huma.ErrorDetail) int { return rank(a) - rank(b) })
		return fieldError(pick)
	}
	switch status {
	case 0: // huma.NewError(0, "") at registration: the documented type
		return errcode.New(errcode.Internal, "%s", msg)
	case http.StatusRequestEntityTooLarge:
		return &errcode.Error{Code: errcode.BodyTooLarge,
			Message: fmt.Sprintf("request body exceeds %d bytes", limit),
			Details: map[string]any{"limit_bytes": limit}}
	case http.StatusBadRequest, http.StatusUnsupportedMediaType:
		if msg == "request body is required" {
			return errcode.New(codeMalformedJSON, "request body is empty; a JSON object is required")
		}
		_, m := first()
		return errcode.New(codeMalformedJSON, "request body is not valid JSON: %s", m)
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusConflict,
		http.StatusTooManyRequests, http.StatusServiceUnavailable:
		_, m := first()
		return errcode.New(map[int]errcode.Code{401: errcode.Unauthorized, 403: errcode.Forbidden,
			404: errcode.NotFound, 409: errcode.Conflict, 429: errcode.RateLimited,
			503: errcode.QueueUnavailable}[status], "%s", m)
	case http.StatusUnprocessableEntity:
		field, m := first()
		if field == "" || field == "body" {
			return errcode.New(errcode.Validation, "%s", m)
		}
		return errcode.Invalid(field, "%s", m)
	}
	for _, err := range errs {
		if err != nil {
			return errcode.Wrap(errcode.Internal, err, "%s: %s", msg, err.Error())
		}
	}
	return errcode.New(errcode.Internal, "%s (HTTP %d from huma)", msg, status)
}

// fieldError turns the location and message of a Huma validation error
// into details.field and our message:
//   - body.jobs[3].payload.x is jobs[3].payload.x, query.limit is limit;
//   - a missing member, which Huma reports at its object, names the member;
//   - a parameter Huma could not parse says what it must be, as the
//     schema's check would (the parser's words are dropped).
func fieldError(d *huma.ErrorDetail) (field, message string) {
	loc, message := d.Location, d.Message
	for _, p := range []string{"body", "query", "path", "header"} {
		if loc == p {
			loc = ""
			break
		}
		if rest, ok := strings.CutPrefix(loc, p+"."); ok {
			loc = rest
			break
		}
	}
	if member, ok := strings.CutPrefix(message, requiredPrefix); ok {
		message = "is required"
		if loc == "" {
			loc = member
		} else {
			loc += "." + member
		}
	}
	if m, ok := strings.CutPrefix(message, "invalid value: "); ok {
		message = m // ID.UnmarshalText's own words
	}
	switch {
	case message == "invalid integer":
		message = validation.MsgExpectedInteger
	case strings.HasPrefix(message, "invalid date/time for format"):
		message = validation.MsgExpectedRFC3339DateTime
	case message == validation.MsgExpectedPropertyNameInObject:
		message = "is required" // the job's type, at body.type
	case message == validation.MsgExpectedMatchExactlyOneSchema:
		// The one oneOf of the requests is a job's, on its type.
		if obj, ok := d.Value.(map[string]any); ok {
			if t, ok := obj["type"].(string); ok {
				loc, message = strings.TrimPrefix(loc+".type", "."), fmt.Sprintf("unknown job type %q", t)
			}
		}
	}
	return loc, message
}
