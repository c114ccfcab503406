package errcode_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
)

func TestEncodeIsOneLineJSONWithCodeAndMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"typed", errcode.New(errcode.SnapshotNotReady, "snapshot %s is BUILDING", "abc"),
			`{"code":"SNAPSHOT_NOT_READY","message":"snapshot abc is BUILDING"}`},
		{"wrapped typed keeps its code", fmt.Errorf("error compiling: %w", errcode.New(errcode.RuleTypeError, "x is text")),
			`{"code":"RULE_TYPE_ERROR","message":"x is text"}`},
		{"untyped is INTERNAL_ERROR", errors.New("disk on fire"),
			`{"code":"INTERNAL_ERROR","message":"disk on fire"}`},
		{"validation names the field", errcode.Invalid("payload.snapshot_id", "must be a uuid"),
			`{"code":"VALIDATION_ERROR","message":"payload.snapshot_id: must be a uuid"}`},
		{"one line", errcode.New(errcode.IOError, "first\nsecond\r\n\tthird"),
			`{"code":"IO_ERROR","message":"first second third"}`},
		// River shows the text in its UI: quotes are escaped, the rest stays readable.
		{"readable", errcode.New(errcode.Webhook4xx, `endpoint <https://x.test/?a=1&b=2> answered "404" — nicht gefunden`),
			`{"code":"WEBHOOK_4XX","message":"endpoint <https://x.test/?a=1&b=2> answered \"404\" — nicht gefunden"}`},
		// Postgres's jsonb holds no NUL: River could not store the attempt.
		{"no NUL", errcode.New(errcode.Internal, "a\x00b"), `{"code":"INTERNAL_ERROR","message":"a b"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := errcode.Encode(tt.err)
			require.Equal(t, tt.want, got)
			require.True(t, json.Valid([]byte(got)))
			require.NotContains(t, got, "\n")
		})
	}
	require.Equal(t, "", errcode.Encode(nil))
}

func TestDecodeReadsWhatEncodeWrote(t *testing.T) {
	t.Parallel()
	in := errcode.Wrap(errcode.Webhook5xx, errors.New("cause"), "endpoint answered HTTP %d", 503)
	got, ok := errcode.Decode(errcode.Encode(in))
	require.True(t, ok)
	require.Equal(t, errcode.Webhook5xx, got.Code)
	require.Equal(t, "endpoint answered HTTP 503", got.Message)
	require.True(t, got.Retryable())

	// The reaper writes the object in SQL (jsonb's text: spaces after colons).
	got, ok = errcode.Decode(`{"code": "LEASE_EXPIRED", "message": "the lease of w1 expired"}`)
	require.True(t, ok)
	require.Equal(t, errcode.LeaseExpired, got.Code)
	require.Equal(t, "the lease of w1 expired", got.Message)
}

func TestDecodeRefusesOtherTexts(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"",
		"SNAPSHOT_NOT_READY: snapshot abc is BUILDING", // stored before attempts were encoded
		"JobCancelError: job cancelled remotely",       // River's own
		"job kind is not registered in the client's Workers bundle: X",
		`{"message":"no code"}`,
		`{"code":5,"message":"code is not a string"}`,
		`{"code":"X"`,
		`"SNAPSHOT_NOT_READY"`,
		`null`,
	} {
		got, ok := errcode.Decode(text)
		require.False(t, ok, text)
		require.Nil(t, got, text)
	}
}
