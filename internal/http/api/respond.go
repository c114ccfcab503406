package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/redact"
	"github.com/bpc-platform/bpc/store"
)

// Codes the API adds to SPEC §4 for requests it cannot read at all.
const (
	codeMalformedJSON    errcode.Code = "MALFORMED_JSON"
	codeMethodNotAllowed errcode.Code = "METHOD_NOT_ALLOWED"
)

// statusByCode is the one table mapping error codes to HTTP statuses.
// Codes not listed are domain conflicts (409) when permanent and server
// errors (500) when retryable.
var statusByCode = map[errcode.Code]int{
	codeMalformedJSON:           http.StatusBadRequest,
	codeMethodNotAllowed:        http.StatusMethodNotAllowed,
	errcode.Unauthorized:        http.StatusUnauthorized,
	errcode.Forbidden:           http.StatusForbidden,
	errcode.NotFound:            http.StatusNotFound,
	errcode.IdempotencyConflict: http.StatusConflict,
	errcode.InvalidState:        http.StatusConflict,
	errcode.Conflict:            http.StatusConflict,
	errcode.ReplayMismatch:      http.StatusConflict,
	errcode.SnapshotNotReady:    http.StatusConflict,
	errcode.SnapshotSealed:      http.StatusConflict,
	errcode.RuleTestsFailed:     http.StatusConflict,
	errcode.RulePkgNotPublished: http.StatusConflict,
	errcode.BodyTooLarge:        http.StatusRequestEntityTooLarge,
	errcode.PayloadTooLarge:     http.StatusRequestEntityTooLarge, // an event payload past event_payload_bytes
	errcode.QuotaExceeded:       http.StatusConflict,
	errcode.Validation:          http.StatusUnprocessableEntity,
	errcode.UnsupportedFormat:   http.StatusUnprocessableEntity,
	errcode.RuleParseError:      http.StatusUnprocessableEntity, // posted rule sources that do not check
	errcode.RuleTypeError:       http.StatusUnprocessableEntity,
	errcode.UnitMismatch:        http.StatusUnprocessableEntity,
	errcode.RuleCycleDetected:   http.StatusUnprocessableEntity,
	errcode.RateLimited:         http.StatusTooManyRequests,
	errcode.QueueUnavailable:    http.StatusServiceUnavailable,
	errcode.DBUnavailable:       http.StatusServiceUnavailable,
	errcode.Internal:            http.StatusInternalServerError,

	// Racing appends to one aggregate: retryable, but the caller's to
	// retry, not a failure of the service (neither logged nor a 5xx).
	errcode.EventVersionConflict: http.StatusConflict,
}

// statusOf is httpStatus for e, but for a quota that frees itself — the
// queued_jobs quota, as the backlog drains, whose details carry
// retry_after_seconds — 429 with Retry-After instead of 409 (SPEC §15).
func statusOf(e *errcode.Error) int {
	if _, later := e.Details["retry_after_seconds"]; later && e.Code == errcode.QuotaExceeded {
		return http.StatusTooManyRequests
	}
	return httpStatus(e.Code)
}

func httpStatus(code errcode.Code) int {
	if s, ok := statusByCode[code]; ok {
		return s
	}
	if code.Retryable() {
		return http.StatusInternalServerError
	}
	return http.StatusConflict
}

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// writeError writes the error envelope (see errorEnvelope). An error is
// never cached, on any route: a shared cache that kept a public 429 or an
// unmatched 404 would answer it to everyone behind it after the cause is
// gone (the public routes' successes are cacheable, so their errors must
// say so themselves).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	body := errorEnvelope(r.Context(), s.Logger, err)
	s.countQuotaRefusal(body)
	w.Header().Set("Cache-Control", "no-store")
	if (body.status == http.StatusTooManyRequests || body.status == http.StatusServiceUnavailable) && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", body.retryAfter())
	}
	writeJSON(w, body.status, body)
}

// errorEnvelope turns any error into the status and body the API answers with.
// Server errors are logged with the correlation id and shown to the client
// as a generic message; client errors are not logged (the request line
// records them).
func errorEnvelope(ctx context.Context, logger *slog.Logger, err error) *ErrorBody {
	e := errcode.As(err)
	switch {
	case e != nil:
	case store.IsUnavailable(err):
		e = errcode.Wrap(errcode.DBUnavailable, err, "%s", err.Error())
	default:
		e = errcode.Wrap(errcode.Internal, err, "%s", err.Error())
	}
	status := statusOf(e)
	detail := ErrorDetail{Code: e.Code, Message: e.Message, CorrelationID: correlationID(ctx), Details: e.Details}
	if status >= 500 {
		if logger != nil {
			logger.ErrorContext(ctx, "request failed",
				slog.String("correlation_id", detail.CorrelationID),
				slog.String("error_code", string(e.Code)),
				slog.String("error", redact.String(err.Error())))
		}
		detail.Message = "internal error; quote the correlation id when reporting it"
		if e.Code == errcode.DBUnavailable {
			detail.Message = "database unavailable; retry later"
		}
		detail.Details = nil
	}
	if detail.Details == nil {
		detail.Details = map[string]any{}
	}
	return &ErrorBody{Err: detail, status: status}
}

// decodeError maps what reading or decoding a request body failed with
// (checkJSONBody) to our envelope: BODY_TOO_LARGE naming the limit, or
// MALFORMED_JSON saying why.
func decodeError(err error) error {
	var maxErr *http.MaxBytesError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &maxErr):
		return &errcode.Error{Code: errcode.BodyTooLarge,
			Message: fmt.Sprintf("request body exceeds %d bytes", maxErr.Limit),
			Details: map[string]any{"limit_bytes": maxErr.Limit}}
	case errors.Is(err, io.EOF):
		return errcode.New(codeMalformedJSON, "request body is empty; a JSON object is required")
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return errcode.New(codeMalformedJSON, "request body is not valid JSON: %s", err.Error())
	default:
		return errcode.New(codeMalformedJSON, "request body could not be read: %s", err.Error())
	}
}
