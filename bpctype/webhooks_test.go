package bpctype_test

import (
	"bytes"
	"io"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
)

const testSecret = "whsec-super-secret-0123456789"

func TestWebhookEndpointSecretStaysOutOfLogs(t *testing.T) {
	t.Parallel()
	ep := bpctype.WebhookEndpoint{WebhookEndpointID: uuid.New(), URL: "https://hooks.example/in", Secret: testSecret}
	for name, newHandler := range map[string]func(io.Writer) slog.Handler{
		"json": func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, nil) },
		"text": func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) },
	} {
		var buf bytes.Buffer
		slog.New(newHandler(&buf)).Info("endpoint", slog.Any("endpoint", ep))
		require.NotContains(t, buf.String(), testSecret, name)
		require.Contains(t, buf.String(), "hooks.example", name)
	}
}
