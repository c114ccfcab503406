package redact_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/redact"
)

const sentinel = "S3ntinel-pw-Zq9"

func TestStringRemovesCredentialsByShape(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"dial postgres://bpc:" + sentinel + "@db:5432/bpc?sslmode=disable failed",
			"dial postgres://bpc:[REDACTED]@db:5432/bpc?sslmode=disable failed"},
		{"postgresql://u:p/a:ss@h/db", "postgresql://u:[REDACTED]@h/db"},
		{"https://hook:" + sentinel + "@example.com/x", "https://hook:[REDACTED]@example.com/x"},
		{"host=db user=bpc password=" + sentinel + " dbname=bpc", "host=db user=bpc password=[REDACTED] dbname=bpc"},
		{"host=db password='a b " + sentinel + "' dbname=bpc", "host=db password=[REDACTED] dbname=bpc"},
		{"PASSWORD = " + sentinel, "PASSWORD = [REDACTED]"},
		{"https://x.example/cb?token=" + sentinel + "&a=1", "https://x.example/cb?token=[REDACTED]&a=1"},
		{`{"secret":"` + sentinel + `","url":"u"}`, `{"secret":"[REDACTED]","url":"u"}`},
		{"Authorization: Bearer " + sentinel, "Authorization: Bearer [REDACTED]"},
		{"Basic " + "b3BlcmF0b3I6" + sentinel, "Basic [REDACTED]"},
		{"key bpc_ab12cd_0123456789abcdefXYZ ok", "key [REDACTED] ok"},
		// Ordinary text is left alone.
		{"postgres://bpc@db:5432/bpc", "postgres://bpc@db:5432/bpc"},
		{"secret: must be 16 to 512 characters", "secret: must be 16 to 512 characters"},
		{"job 42 failed: WEBHOOK_5XX", "job 42 failed: WEBHOOK_5XX"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, redact.String(tt.in), tt.in)
	}
}

func TestRedactorRemovesKnownSecretsAnywhere(t *testing.T) {
	t.Parallel()
	r := redact.New("", "short", sentinel)
	require.Equal(t, "token [REDACTED] leaked", r.String("token "+sentinel+" leaked"))
	require.Equal(t, "short words stay", r.String("short words stay"))
}

func TestHandlerOptionsRedactEveryPartOfALogLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := redact.New(sentinel)
	logger := slog.New(slog.NewJSONHandler(&buf, r.HandlerOptions(&slog.HandlerOptions{Level: slog.LevelDebug})))
	dsn := "postgres://bpc:" + sentinel + "@db/bpc"
	u, err := url.Parse("https://user:" + sentinel + "@example.com/")
	require.NoError(t, err)

	logger.With(slog.String("dsn", dsn)).Error("cannot reach "+dsn,
		slog.Any("error", fmt.Errorf("connect: %w", errors.New("password="+sentinel))),
		slog.String("authorization", "anything"),
		slog.Any("url", u),
		slog.Group("req", slog.String("header", "Bearer "+sentinel)),
		slog.String("note", "plain "+sentinel))
	require.NotContains(t, buf.String(), sentinel)
	require.NotContains(t, buf.String(), "anything")
	require.Contains(t, buf.String(), `"msg":"cannot reach postgres://bpc:[REDACTED]@db/bpc"`)
}

func BenchmarkReplaceAttrOrdinaryLine(b *testing.B) {
	r := redact.New(sentinel)
	opts := r.HandlerOptions(nil)
	logger := slog.New(slog.NewJSONHandler(io.Discard, opts))
	for b.Loop() {
		logger.Info("job transition", slog.String("job_id", "3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f"),
			slog.String("type", "DELIVER_WEBHOOK"), slog.String("status", "SUCCEEDED"), slog.Int("attempt", 1),
			slog.String("error_code", ""), slog.String("source", "river_ui_retry"))
	}
}
