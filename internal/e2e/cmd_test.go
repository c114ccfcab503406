package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/rules"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/testlog"
)

// emptySchemaURL returns a database URL whose search_path is a new, empty schema.
func emptySchemaURL(t *testing.T) string {
	_, url := testdb.EmptySchema(t)
	return url
}

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestServeRefusesASchemaThatIsBehindThenMigrateAndDoctor(t *testing.T) {
	t.Parallel()
	url := emptySchemaURL(t)
	env := envOf(map[string]string{"DATABASE_URL": url, "BPC_ENV": "test", "BPC_ADMIN_TOKEN": testToken, "BPC_HTTP_ADDR": "127.0.0.1:0"})
	var out, errOut bytes.Buffer

	err := run(t.Context(), []string{"serve"}, env, &out, &errOut)
	require.ErrorContains(t, err, "schema is behind")
	require.ErrorContains(t, err, "bpc migrate")

	require.NoError(t, run(t.Context(), []string{"migrate"}, env, &out, &errOut))
	require.Contains(t, out.String(), "001_tenants")

	out.Reset()
	require.NoError(t, run(t.Context(), []string{"doctor"}, env, &out, &errOut))
	require.Contains(t, out.String(), "schema is current")
	require.Contains(t, out.String(), "0 drift(s)")
	require.Contains(t, out.String(), "all good")

	// Serve starts on a current schema and stops when its context ends.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var serveOut, banner syncBuffer
	go func() { done <- run(ctx, []string{"serve", "--role=api"}, env, &serveOut, &banner) }()
	require.Eventually(t, func() bool { return strings.Contains(banner.String(), "/riverui/") }, testTimeout, pollEvery)
	// Every URL the banner prints answers (River UI with the token as
	// password); none is a 404.
	urls := regexp.MustCompile(`http://\S+`).FindAllString(banner.String(), -1)
	require.GreaterOrEqual(t, len(urls), 5, banner.String())
	for _, u := range urls {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		require.NoError(t, err)
		req.SetBasicAuth("ops", testToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s (banner:\n%s)", u, banner.String())
	}
	cancel()
	require.NoError(t, <-done)
}

func TestDoctorReportsDrift(t *testing.T) {
	t.Parallel()
	url := emptySchemaURL(t)
	env := envOf(map[string]string{"DATABASE_URL": url})
	var out, errOut bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"migrate"}, env, &out, &errOut))

	pool, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(t.Context(), `ALTER TABLE river_job DISABLE TRIGGER bpc_mirror_insert;
		INSERT INTO river_job (args, kind, max_attempts, priority, queue, state)
		VALUES ('{"tenant_id":"00000000-0000-0000-0000-00000000de00"}', 'DELIVER_WEBHOOK', 5, 4, 'webhooks', 'available')`)
	require.NoError(t, err)

	out.Reset()
	err = run(t.Context(), []string{"doctor", "--json"}, env, &out, &errOut)
	require.ErrorContains(t, err, "doctor found problems")
	require.Contains(t, out.String(), "bpc_mirror_insert")
	require.Contains(t, out.String(), "has no SSOT row")
}

func TestConfigErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		vars  map[string]string
		code  errcode.Code
		names string
	}{
		{map[string]string{}, errcode.ConfigMissing, "DATABASE_URL"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_ENV": "prod"}, errcode.ConfigMissing, "BPC_ADMIN_TOKEN"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_ENV": "staging"}, errcode.Validation, "BPC_ENV"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_ENV": "prod", "BPC_ADMIN_TOKEN": testToken, "BPC_PUBLIC_BASE_URL": "https://passports.example.com"}, errcode.ConfigMissing, "BPC_KEY_ENCRYPTION_KEY: is required in prod"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_KEY_ENCRYPTION_KEY": "c2VjcmV0LXNlY3JldA=="}, errcode.Validation, "BPC_KEY_ENCRYPTION_KEY: must be 32 bytes"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_KEY_ENCRYPTION_KEY": "my secret passphrase"}, errcode.Validation, "BPC_KEY_ENCRYPTION_KEY: must be 32 bytes"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_ENV": "prod", "BPC_KEY_ENCRYPTION_KEY": "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE=", "BPC_ADMIN_TOKEN": testToken}, errcode.ConfigMissing, "BPC_PUBLIC_BASE_URL: is required in prod"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_ENV": "prod", "BPC_KEY_ENCRYPTION_KEY": "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE=", "BPC_ADMIN_TOKEN": testToken, "BPC_PUBLIC_BASE_URL": "http://passports.example.com"}, errcode.Validation, "BPC_PUBLIC_BASE_URL: must be https in prod"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_PUBLIC_BASE_URL": "https://passports.example.com/?secret=1"}, errcode.Validation, "BPC_PUBLIC_BASE_URL: must have no query or fragment"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_JOBS_MAX_ATTEMPTS_DEFAULT": "0"}, errcode.Validation, "BPC_JOBS_MAX_ATTEMPTS_DEFAULT"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_JOBS_BACKOFF_UNIT_MS": "soon"}, errcode.Validation, "BPC_JOBS_BACKOFF_UNIT_MS"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_JOBS_LEASE_RENEW_SECONDS": "60"}, errcode.Validation, "BPC_JOBS_LEASE_RENEW_SECONDS"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_JOBS_MAX_LEASE_EXPIRIES": "0"}, errcode.Validation, "BPC_JOBS_MAX_LEASE_EXPIRIES"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_JOBS_MAX_LEASE_EXPIRIES": "two"}, errcode.Validation, "BPC_JOBS_MAX_LEASE_EXPIRIES"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_ADMIN_TOKEN": "short"}, errcode.Validation, "BPC_ADMIN_TOKEN"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_LOG_LEVEL": "loud"}, errcode.Validation, "BPC_LOG_LEVEL"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_RULES_MAX_NODES": "0"}, errcode.Validation, "BPC_RULES_MAX_NODES"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_RULES_MAX_CASES": "many"}, errcode.Validation, "BPC_RULES_MAX_CASES"},
		{map[string]string{"DATABASE_URL": "postgres://x", "OTEL_TRACES_EXPORTER": "zipkin"}, errcode.Validation, "OTEL_TRACES_EXPORTER"},
		{map[string]string{"DATABASE_URL": "postgres://x", "OTEL_EXPORTER_OTLP_HEADERS": "Authorization: Bearer s3cr3t-collector-token"}, errcode.Validation, "OTEL_EXPORTER_OTLP_HEADERS: must be comma-separated key=value pairs with percent-encoded values; entry 1 is not"},
		{map[string]string{"DATABASE_URL": "postgres://x", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "a=b,x-api-key=ab%zzsecret"}, errcode.Validation, "OTEL_EXPORTER_OTLP_TRACES_HEADERS: must be comma-separated key=value pairs with percent-encoded values; entry 2 is not"},
		{map[string]string{"DATABASE_URL": "postgres://x", "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, errcode.Validation, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{map[string]string{"DATABASE_URL": "postgres://x", "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, errcode.Validation, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_UPLOADS_DIR": "/nonexistent/uploads"}, errcode.Validation, "BPC_UPLOADS_DIR"},
		{map[string]string{"DATABASE_URL": "postgres://x", "BPC_UPLOADS_DIR": "/etc/hostname"}, errcode.Validation, "BPC_UPLOADS_DIR: must be an existing directory"},
	}
	for _, tc := range cases {
		_, err := service.LoadConfig(envOf(tc.vars))
		require.Error(t, err, "%v", tc.vars)
		require.Equal(t, tc.code, errcode.CodeOf(err), "%v", err)
		require.Contains(t, err.Error(), tc.names)
		require.NotContains(t, err.Error(), "secret", "a bad value is never echoed")
	}

	cfg, err := service.LoadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x"}))
	require.NoError(t, err)
	require.Equal(t, "dev", cfg.Env)
	require.True(t, cfg.AdminTokenGenerated, "dev generates a token")
	require.GreaterOrEqual(t, len(cfg.AdminToken), 32)
	require.Equal(t, 5, cfg.MaxAttemptsDefault)
	require.Equal(t, ":8080", cfg.HTTPAddr)
	require.EqualValues(t, 1000, cfg.BackoffUnit.Milliseconds())
	require.EqualValues(t, 30000, cfg.WebhookTimeout.Milliseconds())
	require.Equal(t, 60, cfg.LeaseSeconds)
	require.Equal(t, 2, cfg.MaxLeaseExpiries)
	require.Equal(t, rules.Limits{MaxNodes: 200_000, MaxCases: 1_000_000}, cfg.CompileLimits().Rules)
	require.False(t, cfg.Tracing.Enabled(), "no OTEL_TRACES_EXPORTER: no tracing")
	cfg, err = service.LoadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x",
		"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}))
	require.NoError(t, err)
	require.False(t, cfg.Tracing.Enabled(), "OTEL_SDK_DISABLED wins")
	require.Empty(t, cfg.UploadsDir, "no uploads directory unless configured: content_ref is refused")
	uploads := t.TempDir()
	cfg, err = service.LoadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x", "BPC_UPLOADS_DIR": uploads + "/./"}))
	require.NoError(t, err)
	require.Equal(t, uploads, cfg.UploadsDir)

	err = run(t.Context(), []string{"frobnicate"}, envOf(nil), &bytes.Buffer{}, &bytes.Buffer{})
	require.ErrorContains(t, err, "unknown subcommand")
	err = run(t.Context(), []string{"serve", "--role=boss"}, envOf(nil), &bytes.Buffer{}, &bytes.Buffer{})
	require.ErrorContains(t, err, "--role")
}

// sentinelPassword is a database password no output may show.
const sentinelPassword = "Sentinel-DB-pw-7f3a9c"

func TestConfigErrorsCarryOneCodePrefix(t *testing.T) {
	t.Parallel()
	_, err := service.LoadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x", "BPC_ENV": "staging", "BPC_ADMIN_TOKEN": testToken}))
	require.EqualError(t, err, `VALIDATION_ERROR: BPC_ENV: must be dev, test or prod, got "staging"`)

	_, err = service.LoadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x", "BPC_ENV": "staging", "BPC_ADMIN_TOKEN": testToken, "BPC_LOG_LEVEL": "loud"}))
	require.EqualError(t, err, `VALIDATION_ERROR: BPC_ENV: must be dev, test or prod, got "staging"; BPC_LOG_LEVEL: must be debug, info, warn or error, got "loud"`)

	// Another code keeps its own prefix.
	_, err = service.LoadConfig(envOf(map[string]string{"BPC_ENV": "staging", "BPC_ADMIN_TOKEN": testToken}))
	require.True(t, strings.HasPrefix(err.Error(), `VALIDATION_ERROR: BPC_ENV: must be dev, test or prod, got "staging"; CONFIG_MISSING: DATABASE_URL: is required`), err.Error())

	// As main prints it.
	err = run(t.Context(), []string{"serve"}, envOf(map[string]string{"DATABASE_URL": "postgres://x", "BPC_ENV": "staging", "BPC_ADMIN_TOKEN": testToken}), io.Discard, io.Discard)
	require.Equal(t, 1, strings.Count(err.Error(), "VALIDATION_ERROR"), err.Error())
}

// No path from a bad start — a config error, an unparseable or unreachable
// database — prints or logs the database password.
func TestStartupErrorsNeverShowTheDatabasePassword(t *testing.T) {
	t.Parallel()
	closed := "postgres://bpc:" + sentinelPassword + "@127.0.0.1:1/bpc?connect_timeout=2"
	tests := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"config error", []string{"serve"}, map[string]string{"DATABASE_URL": closed, "BPC_ENV": "staging"}},
		{"unreachable database (serve)", []string{"serve"}, map[string]string{"DATABASE_URL": closed, "BPC_ENV": "test", "BPC_ADMIN_TOKEN": testToken}},
		{"unreachable database (migrate)", []string{"migrate"}, map[string]string{"DATABASE_URL": closed}},
		{"unreachable database (doctor)", []string{"doctor"}, map[string]string{"DATABASE_URL": closed}},
		{"keyword DSN", []string{"migrate"}, map[string]string{"DATABASE_URL": "host=127.0.0.1 port=1 user=bpc password=" + sentinelPassword + " dbname=bpc connect_timeout=2"}},
		{"unparseable URL", []string{"migrate"}, map[string]string{"DATABASE_URL": "postgres://bpc:" + sentinelPassword + "@[::1/bpc"}},
		{"bad port", []string{"doctor"}, map[string]string{"DATABASE_URL": "postgres://bpc:" + sentinelPassword + "@127.0.0.1:notaport/bpc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), tt.args, envOf(tt.env), &stdout, &stderr)
			require.Error(t, err)
			for what, text := range map[string]string{"error": err.Error(), "stdout": stdout.String(), "stderr": stderr.String()} {
				require.NotContains(t, text, sentinelPassword, "%s: %s", what, text)
			}
		})
	}
}

func TestLoggerRedactsTheProcessSecrets(t *testing.T) {
	t.Parallel()
	signingKey := "c2lnbmluZy1rZXktbmV2ZXItbG9nZ2VkLTAxMjM0NTY3"
	cfg := service.Config{DatabaseURL: "postgres://bpc:" + sentinelPassword + "@db:5432/bpc", AdminToken: testToken,
		SigningKeyBase64: signingKey, LogJSON: true}
	var buf bytes.Buffer
	logger := service.NewLogger(cfg, &buf)
	logger.Error("error connecting to "+cfg.DatabaseURL,
		slog.Any("error", fmt.Errorf("connect: %w", fmt.Errorf("auth as bpc with %s failed", sentinelPassword))),
		slog.String("token", testToken), slog.String("note", "the token "+testToken+" and key "+signingKey))
	require.NotEmpty(t, buf.String())
	for _, secret := range []string{sentinelPassword, testToken, signingKey} {
		require.NotContains(t, buf.String(), secret)
	}
	require.Contains(t, buf.String(), "postgres://bpc:[REDACTED]@db:5432/bpc")

	// A collector's API key in the OTLP exporter's headers, as given and
	// percent-decoded.
	cfg, err := service.LoadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x", "OTEL_TRACES_EXPORTER": "otlp",
		"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=collector-key-0123456789,authorization=Bearer%20collector-token-9876543210"}))
	require.NoError(t, err)
	buf.Reset()
	service.NewLogger(cfg, &buf).Warn("tracing error", slog.String("error",
		"sent x-api-key collector-key-0123456789 and Bearer collector-token-9876543210"))
	require.NotEmpty(t, buf.String())
	for _, secret := range []string{"collector-key-0123456789", "collector-token-9876543210"} {
		require.NotContains(t, buf.String(), secret)
	}

	// The key encryption key of the tenants' signing keys.
	kek := "a2V5LWVuY3J5cHRpb24ta2V5LW5ldmVyLWxvZ2dlZCE="
	cfg, err = service.LoadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x", "BPC_KEY_ENCRYPTION_KEY": kek}))
	require.NoError(t, err)
	buf.Reset()
	service.NewLogger(cfg, &buf).Warn("oops", slog.String("kek", kek))
	require.NotEmpty(t, buf.String())
	require.NotContains(t, buf.String(), kek)
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer = testlog.Buffer
