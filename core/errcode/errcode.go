// Package errcode defines the SPEC §4 error codes and a typed error that
// carries a code, a one-line message, the offending field and whether a retry
// can help. Workers, the store and the admin API all speak in these errors.
package errcode

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Code is a SPEC §4 error code such as VALIDATION_ERROR.
type Code string

// The error codes of SPEC §4, plus the HTTP-only codes of the admin API.
const (
	DBUnavailable        Code = "DB_UNAVAILABLE"
	QueueUnavailable     Code = "QUEUE_UNAVAILABLE"
	Internal             Code = "INTERNAL_ERROR"
	EventVersionConflict Code = "EVENT_VERSION_CONFLICT"
	WebhookTimeout       Code = "WEBHOOK_TIMEOUT"
	Webhook5xx           Code = "WEBHOOK_5XX"
	WebhookNetwork       Code = "WEBHOOK_NETWORK"
	IOError              Code = "IO_ERROR"
	LeaseExpired         Code = "LEASE_EXPIRED"

	Validation          Code = "VALIDATION_ERROR"
	NotFound            Code = "NOT_FOUND"
	SnapshotNotReady    Code = "SNAPSHOT_NOT_READY"
	SnapshotSealed      Code = "SNAPSHOT_SEALED"
	RulePkgNotPublished Code = "RULE_PKG_NOT_PUBLISHED"
	RuleTestsFailed     Code = "RULE_TESTS_FAILED"
	RuleParseError      Code = "RULE_PARSE_ERROR"
	RuleTypeError       Code = "RULE_TYPE_ERROR"
	RuleCycleDetected   Code = "RULE_CYCLE_DETECTED"
	DivisionByZero      Code = "DIVISION_BY_ZERO"
	UnitMismatch        Code = "UNIT_MISMATCH"
	PayloadTooLarge     Code = "PAYLOAD_TOO_LARGE"
	ProofTooLarge       Code = "PROOF_TOO_LARGE"
	ReceiptTooLarge     Code = "RECEIPT_TOO_LARGE"
	SigningKeyMissing   Code = "SIGNING_KEY_MISSING"
	SignatureInvalid    Code = "SIGNATURE_INVALID"
	Webhook4xx          Code = "WEBHOOK_4XX"
	UnsupportedFormat   Code = "UNSUPPORTED_FORMAT"
	InvalidState        Code = "INVALID_STATE"
	// Webhook3xx: the endpoint answered a redirect, which is not followed
	// (it could carry the signed body elsewhere). Like a 4xx it is the
	// endpoint's configuration, which a retry would meet again.
	Webhook3xx Code = "WEBHOOK_3XX"
	// Conflict: the request collides with existing data (a duplicate name).
	Conflict Code = "CONFLICT"
	// ReplayMismatch: recompiling a stored passport version did not
	// reproduce its stored bytes, hashes or signature.
	ReplayMismatch Code = "REPLAY_MISMATCH"
	// WebhookDestinationDenied: at send time the webhook endpoint's address
	// is one the destination policy refuses (SPEC §12); nothing was sent,
	// and a retry would dial the same address.
	WebhookDestinationDenied Code = "WEBHOOK_DESTINATION_DENIED"
	// QuotaExceeded: the tenant reached one of its quotas (SPEC §15); the
	// details name the quota, its limit and the use counted.
	QuotaExceeded Code = "QUOTA_EXCEEDED"
	// KeyRevoked: the signing key was revoked, and what it signed at or
	// after its compromise time does not verify (SPEC §16); a job asked
	// to sign with it fails for good.
	KeyRevoked Code = "KEY_REVOKED"

	Unauthorized        Code = "UNAUTHORIZED"
	Forbidden           Code = "FORBIDDEN"
	IdempotencyConflict Code = "IDEMPOTENCY_CONFLICT"
	BodyTooLarge        Code = "BODY_TOO_LARGE"
	RateLimited         Code = "RATE_LIMITED"
	ConfigMissing       Code = "CONFIG_MISSING"
)

// retryable lists the codes a retry can fix; every other code is permanent.
var retryable = map[Code]bool{
	DBUnavailable:        true,
	QueueUnavailable:     true,
	Internal:             true,
	EventVersionConflict: true,
	WebhookTimeout:       true,
	Webhook5xx:           true,
	WebhookNetwork:       true,
	IOError:              true,
	LeaseExpired:         true,
}

// Retryable reports whether an error with this code may succeed when retried.
func (c Code) Retryable() bool { return retryable[c] }

// Error is a typed error with a SPEC code. Its Error() text is "CODE: message",
// for logs and people; a job attempt stores it as Encode's JSON instead.
type Error struct {
	Code    Code
	Message string
	// Field names the offending input field for VALIDATION_ERROR, if any.
	Field string
	// Details carries structured context for API responses; never secrets.
	Details map[string]any
	cause   error
}

// Error returns "CODE: message" on one line.
func (e *Error) Error() string {
	return string(e.Code) + ": " + oneLine(e.Message)
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// Retryable reports whether a retry may help.
func (e *Error) Retryable() bool { return e.Code.Retryable() }

// New returns an Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error with a message that keeps cause for errors.Is/As.
func Wrap(code Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), cause: cause}
}

// Invalid returns a VALIDATION_ERROR naming the offending field.
func Invalid(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{
		Code:    Validation,
		Message: field + ": " + msg,
		Field:   field,
		Details: map[string]any{"field": field},
	}
}

// InvalidWrap is Invalid that keeps cause for errors.Is/As.
func InvalidWrap(field string, cause error, format string, args ...any) *Error {
	e := Invalid(field, format, args...)
	e.cause = cause
	return e
}

// Prefixed returns err naming its field prefix+field, the field of a value
// nested in a request ("payload.", "jobs[2]."), as a VALIDATION_ERROR that
// Invalid would build for it; err itself when it names no field or prefix
// is empty.
func Prefixed(err error, prefix string) error {
	if e := As(err); e != nil && e.Field != "" && prefix != "" {
		return Invalid(prefix+e.Field, "%s", strings.TrimPrefix(e.Message, e.Field+": "))
	}
	return err
}

// As returns the *Error in err's chain, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// CodeOf returns the code of err, INTERNAL_ERROR for untyped errors and "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	if e := As(err); e != nil {
		return e.Code
	}
	return Internal
}

// oneLine collapses newlines and runs of whitespace so that messages stay on
// one line. Other control characters become spaces too: NUL among them,
// which Postgres cannot hold in jsonb (River stores attempt errors there).
func oneLine(s string) string {
	if !strings.ContainsFunc(s, breaksLine) {
		return s
	}
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
}

func breaksLine(r rune) bool {
	return unicode.IsControl(r) || (unicode.IsSpace(r) && r != ' ')
}
