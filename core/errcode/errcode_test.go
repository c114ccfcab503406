package errcode_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
)

func TestErrorTextIsCodeColonMessageOnOneLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  *errcode.Error
		want string
	}{
		{"plain", errcode.New(errcode.NotFound, "job %s not found", "abc"), "NOT_FOUND: job abc not found"},
		{"newlines collapsed", errcode.New(errcode.Internal, "line one\nline two\r\n\tline three"), "INTERNAL_ERROR: line one line two line three"},
		{"wrap keeps message", errcode.Wrap(errcode.IOError, io.ErrUnexpectedEOF, "read failed:\n%s", "disk"), "IO_ERROR: read failed: disk"},
		{"control characters are spaces", errcode.New(errcode.Internal, "nul\x00here\x7f and\u2028there"), "INTERNAL_ERROR: nul here and there"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.err.Error())
			require.NotContains(t, tt.err.Error(), "\n")
		})
	}
}

// The two lists of SPEC §4, verbatim.
var (
	specRetryable = []errcode.Code{
		"DB_UNAVAILABLE", "QUEUE_UNAVAILABLE", "INTERNAL_ERROR", "EVENT_VERSION_CONFLICT",
		"WEBHOOK_TIMEOUT", "WEBHOOK_5XX", "WEBHOOK_NETWORK", "IO_ERROR", "LEASE_EXPIRED",
	}
	specNonRetryable = []errcode.Code{
		"VALIDATION_ERROR", "NOT_FOUND", "SNAPSHOT_NOT_READY", "SNAPSHOT_SEALED",
		"RULE_PKG_NOT_PUBLISHED", "RULE_TESTS_FAILED", "RULE_PARSE_ERROR", "RULE_TYPE_ERROR",
		"RULE_CYCLE_DETECTED", "DIVISION_BY_ZERO", "UNIT_MISMATCH", "PAYLOAD_TOO_LARGE",
		"PROOF_TOO_LARGE", "RECEIPT_TOO_LARGE", "SIGNING_KEY_MISSING", "SIGNATURE_INVALID",
		"WEBHOOK_4XX", "UNSUPPORTED_FORMAT", "INVALID_STATE", "WEBHOOK_3XX",
	}
)

func TestRetryableMatchesSpecLists(t *testing.T) {
	t.Parallel()
	for _, code := range specRetryable {
		require.True(t, code.Retryable(), "%s is retryable per SPEC §4", code)
		require.True(t, errcode.New(code, "x").Retryable(), "%s error is retryable", code)
	}
	for _, code := range specNonRetryable {
		require.False(t, code.Retryable(), "%s is non-retryable per SPEC §4", code)
		require.False(t, errcode.New(code, "x").Retryable(), "%s error is non-retryable", code)
	}
}

func TestConstantsSpellSpecCodes(t *testing.T) {
	t.Parallel()
	// A typo in a constant would silently make a code non-retryable or
	// unmapped, so pin the constants to the SPEC spelling.
	require.Equal(t, specRetryable, []errcode.Code{
		errcode.DBUnavailable, errcode.QueueUnavailable, errcode.Internal, errcode.EventVersionConflict,
		errcode.WebhookTimeout, errcode.Webhook5xx, errcode.WebhookNetwork, errcode.IOError, errcode.LeaseExpired,
	})
	require.Equal(t, specNonRetryable, []errcode.Code{
		errcode.Validation, errcode.NotFound, errcode.SnapshotNotReady, errcode.SnapshotSealed,
		errcode.RulePkgNotPublished, errcode.RuleTestsFailed, errcode.RuleParseError, errcode.RuleTypeError,
		errcode.RuleCycleDetected, errcode.DivisionByZero, errcode.UnitMismatch, errcode.PayloadTooLarge,
		errcode.ProofTooLarge, errcode.ReceiptTooLarge, errcode.SigningKeyMissing, errcode.SignatureInvalid,
		errcode.Webhook4xx, errcode.UnsupportedFormat, errcode.InvalidState, errcode.Webhook3xx,
	})
}

func TestHTTPOnlyCodesAreNotRetryable(t *testing.T) {
	t.Parallel()
	for _, code := range []errcode.Code{
		errcode.Unauthorized, errcode.Forbidden, errcode.IdempotencyConflict,
		errcode.BodyTooLarge, errcode.RateLimited, errcode.ConfigMissing, "SOMETHING_UNKNOWN",
	} {
		require.False(t, code.Retryable(), "%s", code)
	}
}

// SPEC §12 adds WEBHOOK_DESTINATION_DENIED: permanent, and stored with a
// job attempt like every other code.
func TestWebhookDestinationDenied(t *testing.T) {
	t.Parallel()
	require.Equal(t, errcode.Code("WEBHOOK_DESTINATION_DENIED"), errcode.WebhookDestinationDenied)
	require.False(t, errcode.WebhookDestinationDenied.Retryable())
	err := errcode.New(errcode.WebhookDestinationDenied, "the webhook endpoint's address is not public")
	require.Equal(t, "WEBHOOK_DESTINATION_DENIED: the webhook endpoint's address is not public", err.Error())
	require.Equal(t, `{"code":"WEBHOOK_DESTINATION_DENIED","message":"the webhook endpoint's address is not public"}`, errcode.Encode(err))
}

func TestInvalidNamesTheField(t *testing.T) {
	t.Parallel()
	err := errcode.Invalid("payload.snapshot_id", "must be a %s", "uuid")
	require.Equal(t, errcode.Validation, err.Code)
	require.Equal(t, "payload.snapshot_id", err.Field)
	require.Equal(t, map[string]any{"field": "payload.snapshot_id"}, err.Details)
	require.Equal(t, "payload.snapshot_id: must be a uuid", err.Message)
	require.Equal(t, "VALIDATION_ERROR: payload.snapshot_id: must be a uuid", err.Error())
	require.False(t, err.Retryable())
}

func TestAsAndCodeOfSeeThroughWrapping(t *testing.T) {
	t.Parallel()
	inner := errcode.New(errcode.SnapshotNotReady, "snapshot is BUILDING")
	wrapped := fmt.Errorf("error compiling: %w", fmt.Errorf("error loading snapshot: %w", inner))

	got := errcode.As(wrapped)
	require.NotNil(t, got)
	require.Same(t, inner, got)
	require.Equal(t, errcode.SnapshotNotReady, errcode.CodeOf(wrapped))
}

func TestCodeOfNilAndUntyped(t *testing.T) {
	t.Parallel()
	require.Equal(t, errcode.Code(""), errcode.CodeOf(nil))
	require.Equal(t, errcode.Internal, errcode.CodeOf(errors.New("boom")))
	require.Equal(t, errcode.Internal, errcode.CodeOf(fmt.Errorf("context: %w", io.EOF)))
	require.Nil(t, errcode.As(errors.New("boom")))
	require.Nil(t, errcode.As(nil))
}

func TestWrapKeepsCauseForErrorsIs(t *testing.T) {
	t.Parallel()
	err := errcode.Wrap(errcode.DBUnavailable, io.ErrUnexpectedEOF, "database went away")
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.ErrorIs(t, fmt.Errorf("outer: %w", err), io.ErrUnexpectedEOF)
	require.Equal(t, "DB_UNAVAILABLE: database went away", err.Error())
	require.True(t, err.Retryable())
}

func TestInvalidWrapKeepsCauseAndField(t *testing.T) {
	t.Parallel()
	cause := errors.New("bad digit")
	err := errcode.InvalidWrap("payload_hash", cause, "must be %d hex digits", 64)
	require.ErrorIs(t, err, cause)
	require.Equal(t, "payload_hash", err.Field)
	require.Equal(t, map[string]any{"field": "payload_hash"}, err.Details)
	require.Equal(t, "VALIDATION_ERROR: payload_hash: must be 64 hex digits", err.Error())
}
