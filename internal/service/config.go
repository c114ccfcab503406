package service

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5/pgconn"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/riverqueue/river/rivertype"

	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/core/rules"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/internal/http/access"
	"github.com/bpc-platform/bpc/internal/http/public"
	"github.com/bpc-platform/bpc/internal/jobrun"
	"github.com/bpc-platform/bpc/internal/jobrun/trigger"
	"github.com/bpc-platform/bpc/internal/redact"
	"github.com/bpc-platform/bpc/internal/tracing"
	"github.com/bpc-platform/bpc/internal/webhook/breaker"
	"github.com/bpc-platform/bpc/internal/webhook/destination"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/workers"
)

// Config is the service configuration (SPEC §5), read once from the
// environment and validated before anything starts.
type Config struct {
	DatabaseURL string
	// DatabaseReadURL is a streaming replica of DatabaseURL's database
	// (BPC_DATABASE_READ_URL; optional): the public verification routes
	// and the operators' list routes read from it while it is healthy
	// (store.ReadRouter). ReadMaxLag is how far behind it may be
	// (BPC_DATABASE_READ_MAX_LAG_MS), ReadCheckInterval how often its lag
	// is measured (BPC_DATABASE_READ_CHECK_INTERVAL_MS).
	DatabaseReadURL     string
	ReadMaxLag          time.Duration
	ReadCheckInterval   time.Duration
	Env                 string
	HTTPAddr            string
	AdminToken          string
	AdminTokenGenerated bool
	WorkerID            string
	PollInterval        time.Duration
	FetchCooldown       time.Duration
	PipelineCooldown    time.Duration
	PipelinePoll        time.Duration
	QueueMaxDepth       int
	// RateLimitRPS and RateLimitBurst bound each API key, and each client
	// address on the public routes and after failed credentials (per
	// process; 0 RPS turns the limits off). TenantRateLimit is the request
	// budget all of a tenant's keys share on top of each key's
	// (BPC_TENANT_RATE_LIMIT_RPS and _BURST; per process; 0 RPS turns it
	// off).
	RateLimitRPS       int
	RateLimitBurst     int
	TenantRateLimit    access.Budget
	ReaperInterval     time.Duration
	MaxLeaseExpiries   int
	Maintenance        jobrun.MaintenanceConfig
	Breaker            breaker.Config
	LeaseSeconds       int
	LeaseRenewSeconds  int
	MaxAttemptsDefault int
	BackoffUnit        time.Duration
	WorkerConcurrency  int
	ShutdownTimeout    time.Duration
	PayloadMaxBytes    int
	ProofMaxBytes      int
	ReceiptMaxBytes    int
	SigningKeyBase64   string
	SigningKeyID       string
	// KeyEncryptionKey encrypts the tenants' private signing keys at rest
	// (BPC_KEY_ENCRYPTION_KEY, 32 bytes in standard base64): required in
	// prod; in test, unset, the fixed TestKeyEncryptionKey; in dev, unset,
	// nil until New reads or generates KeyEncryptionKeyFile.
	KeyEncryptionKey []byte
	// KeyEncryptionKeyFile is where dev keeps its generated key encryption
	// key (.bpc-dev/key-encryption-key) when BPC_KEY_ENCRYPTION_KEY is unset.
	KeyEncryptionKeyFile string
	// KeyEncryptionKeySource says where KeyEncryptionKey came from: "env",
	// "test-fixed" or "dev-file".
	KeyEncryptionKeySource string
	keyEncryptionKeyBase64 string
	CompilerBuildID        string
	WebhookTimeout         time.Duration
	// WebhookConnectTimeout and WebhookResponseHeaderTimeout bound a
	// webhook POST's phases inside WebhookTimeout
	// (BPC_WEBHOOK_CONNECT_TIMEOUT_MS, BPC_WEBHOOK_RESPONSE_HEADER_TIMEOUT_MS).
	WebhookConnectTimeout        time.Duration
	WebhookResponseHeaderTimeout time.Duration
	// WebhookTenantConcurrency is the most deliveries of one tenant in
	// flight at once across the fleet (BPC_WEBHOOK_TENANT_CONCURRENCY): the
	// webhooks queue's per-tenant cap of running jobs, so that a tenant's
	// slow or silent endpoints hold its own deliveries, not the workers.
	WebhookTenantConcurrency int
	// WebhookAllowPrivate admits loopback, private and other non-public
	// webhook destinations (BPC_WEBHOOK_ALLOW_PRIVATE; default true except
	// in prod).
	WebhookAllowPrivate bool
	ExportDir           string
	// PublicBaseURL is the base of the BPC-QR-2 links GENERATE_QR renders
	// (BPC_PUBLIC_BASE_URL; core/qr.CheckBaseURL, a trailing slash
	// dropped): required and https in prod; in dev and test it defaults to
	// http:// and the address the HTTP server listens on (localhost for a
	// wildcard address), and is left empty when BPC_HTTP_ADDR's port is 0,
	// for the service to fill in once it listens.
	PublicBaseURL    string
	HTTPMaxBodyBytes int64
	LogLevel         slog.Level
	LogJSON          bool
	// Rules bounds rule sources and test runs (BPC_RULES_MAX_NODES,
	// BPC_RULES_MAX_CASES).
	Rules rules.Limits
	// Tracing is OpenTelemetry tracing (OTEL_TRACES_EXPORTER,
	// OTEL_SERVICE_NAME; off when unset). Its Console writer is set by the
	// caller, never from the environment.
	Tracing tracing.Config
	// otlpHeaderValues are the values of the OTLP exporter's headers
	// (OTEL_EXPORTER_OTLP_HEADERS: a collector's API key), which the log
	// redacts like the process's other secrets.
	otlpHeaderValues []string
	// UploadsDir is the directory INGEST_DOCUMENT's content_ref names files
	// in (BPC_UPLOADS_DIR), absolute; empty (the default) refuses
	// content_ref.
	UploadsDir string
	// DBListen runs River with Postgres LISTEN/NOTIFY (BPC_DB_LISTEN); false
	// runs it poll-only, for PgBouncer in transaction mode. The public
	// answers' cache listens for changes only with it.
	DBListen bool
	// PublicCache bounds the public routes' cache of finished answers:
	// BPC_PUBLIC_CACHE_MB (0 turns it off), BPC_PUBLIC_CACHE_ENTRIES, and
	// BPC_PUBLIC_CACHE_MAX_AGE_S, an answer's longest life (what bounds a
	// change's reach without LISTEN: 300 s with it, 60 s without).
	PublicCache public.AnswersConfig
	// PublicCDNMaxAge is how long a CDN may hold a public answer without
	// asking again (BPC_PUBLIC_CDN_MAX_AGE_S, s-maxage; 0: it must ask
	// every time).
	PublicCDNMaxAge time.Duration
	// QueueEnabled turns the RabbitMQ job trigger on (BPC_QUEUE_ENABLED);
	// Queue says where it connects (BPC_QUEUE_URL, BPC_QUEUE_EXCHANGE,
	// BPC_QUEUE_ROUTING_KEY).
	QueueEnabled bool
	Queue        trigger.Config
	// QueueWakeInterval is the least time between two wake-ups of a queue
	// by the trigger (BPC_QUEUE_WAKE_INTERVAL_MS; trigger.Listener's
	// MinWakeInterval).
	QueueWakeInterval time.Duration
	// HealthRequireQueue makes readiness fail (503) while the trigger is
	// not connected, instead of answering 200 with the queue degraded
	// (BPC_HEALTH_REQUIRE_QUEUE).
	HealthRequireQueue bool
	// Quotas are the tenants' default quotas (SPEC §15), which the platform
	// overrides per tenant: BPC_TENANT_MAX_WEBHOOK_ENDPOINTS,
	// BPC_TENANT_MAX_WEBHOOK_SUBSCRIPTIONS, BPC_TENANT_MAX_API_KEYS,
	// BPC_TENANT_MAX_QUEUED_JOBS and BPC_EVENT_PAYLOAD_MAX_BYTES; the rate
	// members are the tenant request budget's defaults.
	Quotas passport.Quotas
	// RiverFetch makes the workers fetch with River's own statement, first
	// come first served across tenants, instead of the fair fetch: the
	// benchmarks' "before"; never set from the environment.
	RiverFetch bool
	// BeforeCommit is the workers' BeforeCommit test hook; never set from
	// the environment.
	BeforeCommit func(ctx context.Context, job *rivertype.JobRow) error
}

// rescueAfter is when River's own rescuer takes a job back: a backstop
// behind the lease (the reaper acts TTL after the last renewal) and behind
// every job timeout, so that it never takes a live job: an hour, or more
// when the lease or the webhook timeout are long.
func (c Config) rescueAfter() time.Duration {
	lease := time.Duration(c.LeaseSeconds) * time.Second
	return max(time.Hour, 2*(c.WebhookTimeout+lease))
}

// WebhookDestinations is the destination policy of webhook URLs, applied
// at registration and when dialing.
func (c Config) WebhookDestinations() *destination.Policy {
	return &destination.Policy{AllowPrivate: c.WebhookAllowPrivate}
}

// WebhookTimeouts are the webhook client's phase timeouts, each at most
// the total: a phase longer than the whole POST would never fire.
func (c Config) WebhookTimeouts() workers.Timeouts {
	return workers.Timeouts{Connect: min(c.WebhookConnectTimeout, c.WebhookTimeout),
		ResponseHeader: min(c.WebhookResponseHeaderTimeout, c.WebhookTimeout)}
}

// CompileLimits are the compiler's artifact size limits and the rule limits.
func (c Config) CompileLimits() compiler.Limits {
	return compiler.Limits{PayloadMaxBytes: c.PayloadMaxBytes, ProofMaxBytes: c.ProofMaxBytes, ReceiptMaxBytes: c.ReceiptMaxBytes,
		Rules: c.Rules}
}

// configError names the variable that stopped the process.
func configError(code errcode.Code, name, format string, args ...any) error {
	return &errcode.Error{Code: code, Message: name + ": " + fmt.Sprintf(format, args...), Field: name}
}

// LoadConfig reads and validates the configuration from getenv.
func LoadConfig(getenv func(string) string) (Config, error) {
	c := Config{
		DatabaseURL:      getenv("DATABASE_URL"),
		DatabaseReadURL:  strings.TrimSpace(getenv("BPC_DATABASE_READ_URL")),
		Env:              or(getenv("BPC_ENV"), "dev"),
		HTTPAddr:         or(getenv("BPC_HTTP_ADDR"), ":8080"),
		AdminToken:       getenv("BPC_ADMIN_TOKEN"),
		WorkerID:         getenv("BPC_WORKER_ID"),
		SigningKeyBase64: getenv("BPC_SIGNING_ED25519_PRIVATE_KEY_BASE64"),
		SigningKeyID:     or(getenv("BPC_SIGNING_KEY_ID"), "dev-key-1"),
		CompilerBuildID:  or(getenv("BPC_COMPILER_BUILD_ID"), "bpc-dev"),
		ExportDir:        or(getenv("BPC_EXPORT_DIR"), "exports"),
		UploadsDir:       strings.TrimSpace(getenv("BPC_UPLOADS_DIR")),
	}
	var errs []error
	num := func(name string, def, lo, hi int) int {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			errs = append(errs, configError(errcode.Validation, name, "must be an integer from %d to %d, got %q", lo, hi, v))
			return def
		}
		return n
	}
	ms := func(name string, def, lo, hi int) time.Duration {
		return time.Duration(num(name, def, lo, hi)) * time.Millisecond
	}
	c.PollInterval = ms("BPC_JOBS_POLL_INTERVAL_MS", 1000, 1, 60_000)
	c.ReadMaxLag = ms("BPC_DATABASE_READ_MAX_LAG_MS", 5000, 100, 3_600_000)
	c.ReadCheckInterval = ms("BPC_DATABASE_READ_CHECK_INTERVAL_MS", 1000, 10, 60_000)
	c.FetchCooldown = ms("BPC_JOBS_FETCH_COOLDOWN_MS", 10, 1, 60_000)
	c.PipelineCooldown = ms("BPC_JOBS_PIPELINE_FETCH_COOLDOWN_MS", 2, 1, 60_000)
	c.PipelinePoll = ms("BPC_JOBS_PIPELINE_POLL_INTERVAL_MS", 100, 1, 60_000)
	c.QueueMaxDepth = num("BPC_QUEUE_MAX_DEPTH", 0, 0, 1_000_000_000)
	c.RateLimitRPS = num("BPC_RATE_LIMIT_RPS", 50, 0, 1_000_000)
	c.RateLimitBurst = num("BPC_RATE_LIMIT_BURST", 100, 1, 1_000_000)
	c.ReaperInterval = ms("BPC_JOBS_REAPER_INTERVAL_MS", 5000, 10, 3_600_000)
	c.Maintenance = jobrun.DefaultMaintenanceConfig()
	day := 24 * time.Hour
	c.Maintenance.RiverRetention = time.Duration(num("BPC_RETENTION_RIVER_DAYS", 7, 0, 36_500)) * day
	c.Maintenance.JobsRetention = time.Duration(num("BPC_RETENTION_JOBS_DAYS", 90, 0, 36_500)) * day
	c.Maintenance.ConsistencyInterval = ms("BPC_MAINTENANCE_CONSISTENCY_INTERVAL_MS", 300_000, 0, 86_400_000)
	c.Maintenance.RetentionInterval = ms("BPC_MAINTENANCE_RETENTION_INTERVAL_MS", 3_600_000, 0, 86_400_000)
	c.Breaker = breaker.DefaultConfig()
	switch v := strings.ToLower(or(getenv("BPC_WEBHOOK_BREAKER_ENABLED"), "true")); v {
	case "true", "1":
	case "false", "0":
		c.Breaker.Disabled = true
	default:
		errs = append(errs, configError(errcode.Validation, "BPC_WEBHOOK_BREAKER_ENABLED", "must be true or false, got %q", v))
	}
	c.Breaker.Window = ms("BPC_WEBHOOK_BREAKER_WINDOW_MS", 60_000, 100, 86_400_000)
	c.Breaker.MinAttempts = num("BPC_WEBHOOK_BREAKER_MIN_ATTEMPTS", 5, 1, 1_000_000)
	c.Breaker.FailureThreshold = float64(num("BPC_WEBHOOK_BREAKER_FAILURE_PERCENT", 50, 1, 100)) / 100
	c.Breaker.Cooldown = ms("BPC_WEBHOOK_BREAKER_COOLDOWN_MS", 30_000, 10, 86_400_000)
	if err := c.Breaker.Validate(); err != nil {
		errs = append(errs, configError(errcode.Validation, "BPC_WEBHOOK_BREAKER_*", "%s", err.Error()))
	}
	c.LeaseSeconds = num("BPC_JOBS_LEASE_SECONDS", 60, 2, 86_400)
	c.LeaseRenewSeconds = num("BPC_JOBS_LEASE_RENEW_SECONDS", 30, 1, 86_400)
	c.MaxLeaseExpiries = num("BPC_JOBS_MAX_LEASE_EXPIRIES", jobrun.DefaultMaxLeaseExpiries, 1, 100)
	c.MaxAttemptsDefault = num("BPC_JOBS_MAX_ATTEMPTS_DEFAULT", 5, 1, 100)
	c.BackoffUnit = ms("BPC_JOBS_BACKOFF_UNIT_MS", 1000, 1, 3_600_000)
	c.WorkerConcurrency = num("BPC_WORKER_CONCURRENCY", 10, 1, 10_000)
	c.ShutdownTimeout = ms("BPC_WORKER_SHUTDOWN_TIMEOUT_MS", 30_000, 0, 3_600_000)
	c.PayloadMaxBytes = num("BPC_PAYLOAD_MAX_BYTES", 131_072, 1, 1<<30)
	c.ProofMaxBytes = num("BPC_PROOF_MAX_BYTES", 262_144, 1, 1<<30)
	c.ReceiptMaxBytes = num("BPC_RECEIPT_MAX_BYTES", 16_384, 1, 1<<30)
	c.Rules.MaxNodes = num("BPC_RULES_MAX_NODES", rules.DefaultMaxNodes, 1, 10_000_000)
	c.Rules.MaxCases = num("BPC_RULES_MAX_CASES", rules.DefaultMaxCases, 1, 1_000_000_000)
	c.WebhookTimeout = ms("BPC_WEBHOOK_TIMEOUT_MS", 30_000, 1, 600_000)
	c.WebhookConnectTimeout = ms("BPC_WEBHOOK_CONNECT_TIMEOUT_MS", 5_000, 1, 600_000)
	c.WebhookResponseHeaderTimeout = ms("BPC_WEBHOOK_RESPONSE_HEADER_TIMEOUT_MS", 10_000, 1, 600_000)
	c.WebhookTenantConcurrency = num("BPC_WEBHOOK_TENANT_CONCURRENCY", 4, 1, 1000)
	// 8 MiB: a 4 MiB document (core/facts.MaxDocumentBytes) travels base64.
	c.HTTPMaxBodyBytes = int64(num("BPC_HTTP_MAX_BODY_BYTES", 8<<20, 1024, 1<<30))
	c.Quotas = passport.DefaultQuotas()
	quota := func(name, env string, limit *int) {
		lo, hi, _ := passport.QuotaBounds(name)
		*limit = num(env, *limit, lo, hi)
	}
	quota(passport.QuotaWebhookEndpoints, "BPC_TENANT_MAX_WEBHOOK_ENDPOINTS", &c.Quotas.WebhookEndpoints)
	quota(passport.QuotaWebhookSubscriptions, "BPC_TENANT_MAX_WEBHOOK_SUBSCRIPTIONS", &c.Quotas.WebhookSubscriptions)
	quota(passport.QuotaAPIKeys, "BPC_TENANT_MAX_API_KEYS", &c.Quotas.APIKeys)
	quota(passport.QuotaQueuedJobs, "BPC_TENANT_MAX_QUEUED_JOBS", &c.Quotas.QueuedJobs)
	quota(passport.QuotaEventPayloadBytes, "BPC_EVENT_PAYLOAD_MAX_BYTES", &c.Quotas.EventPayloadBytes)
	quota(passport.QuotaRateLimitRPS, "BPC_TENANT_RATE_LIMIT_RPS", &c.Quotas.RateLimitRPS)
	quota(passport.QuotaRateLimitBurst, "BPC_TENANT_RATE_LIMIT_BURST", &c.Quotas.RateLimitBurst)
	c.TenantRateLimit = access.Budget{RPS: float64(c.Quotas.RateLimitRPS), Burst: c.Quotas.RateLimitBurst}

	switch c.Env {
	case "dev", "test", "prod":
	default:
		errs = append(errs, configError(errcode.Validation, "BPC_ENV", "must be dev, test or prod, got %q", c.Env))
	}
	// Receivers run on the developer's machine in dev and test; production
	// refuses private destinations unless the operator says otherwise.
	c.WebhookAllowPrivate = c.Env != "prod"
	switch v := strings.ToLower(strings.TrimSpace(getenv("BPC_WEBHOOK_ALLOW_PRIVATE"))); v {
	case "":
	case "true", "1":
		c.WebhookAllowPrivate = true
	case "false", "0":
		c.WebhookAllowPrivate = false
	default:
		errs = append(errs, configError(errcode.Validation, "BPC_WEBHOOK_ALLOW_PRIVATE", "must be true or false, got %q", v))
	}
	flag := func(name string, def bool) bool {
		switch v := strings.ToLower(strings.TrimSpace(getenv(name))); v {
		case "":
			return def
		case "true", "1":
			return true
		case "false", "0":
			return false
		default:
			errs = append(errs, configError(errcode.Validation, name, "must be true or false, got %q", v))
			return def
		}
	}
	c.DBListen = flag("BPC_DB_LISTEN", true)
	c.PublicCache = public.AnswersConfig{
		MaxBytes:   int64(num("BPC_PUBLIC_CACHE_MB", 64, 0, 1<<20)) << 20,
		MaxEntries: num("BPC_PUBLIC_CACHE_ENTRIES", 50_000, 1, 100_000_000),
		MaxAge:     time.Duration(num("BPC_PUBLIC_CACHE_MAX_AGE_S", map[bool]int{true: 300, false: 60}[c.DBListen], 1, 86_400)) * time.Second,
	}
	c.PublicCDNMaxAge = time.Duration(num("BPC_PUBLIC_CDN_MAX_AGE_S", 60, 0, 86_400)) * time.Second
	c.QueueEnabled = flag("BPC_QUEUE_ENABLED", false)
	c.HealthRequireQueue = flag("BPC_HEALTH_REQUIRE_QUEUE", false)
	c.QueueWakeInterval = ms("BPC_QUEUE_WAKE_INTERVAL_MS", 50, 0, 60_000)
	c.Queue = trigger.Config{
		URL:        or(getenv("BPC_QUEUE_URL"), "amqp://guest:guest@127.0.0.1:5672/"),
		Exchange:   or(getenv("BPC_QUEUE_EXCHANGE"), "bpc"),
		RoutingKey: or(getenv("BPC_QUEUE_ROUTING_KEY"), "jobs.trigger"),
	}
	if c.QueueEnabled {
		// The message names the variable, never its value: the URL holds
		// a password.
		if _, err := amqp.ParseURI(c.Queue.URL); err != nil {
			errs = append(errs, configError(errcode.Validation, "BPC_QUEUE_URL", "must be an AMQP URL (amqp://user:password@host:5672/vhost)"))
		}
		for _, f := range []struct{ name, value string }{
			{"BPC_QUEUE_EXCHANGE", c.Queue.Exchange}, {"BPC_QUEUE_ROUTING_KEY", c.Queue.RoutingKey},
		} {
			if len(f.value) > 255 || strings.ContainsFunc(f.value, unicode.IsControl) {
				errs = append(errs, configError(errcode.Validation, f.name, "must be at most 255 printable characters"))
			}
		}
	} else if c.HealthRequireQueue {
		errs = append(errs, configError(errcode.Validation, "BPC_HEALTH_REQUIRE_QUEUE", "needs BPC_QUEUE_ENABLED=true"))
	}
	if c.LeaseRenewSeconds >= c.LeaseSeconds {
		errs = append(errs, configError(errcode.Validation, "BPC_JOBS_LEASE_RENEW_SECONDS", "must be less than BPC_JOBS_LEASE_SECONDS (%d)", c.LeaseSeconds))
	}
	switch level := strings.ToLower(or(getenv("BPC_LOG_LEVEL"), "info")); level {
	case "debug", "info", "warn", "error":
		_ = c.LogLevel.UnmarshalText([]byte(level))
	default:
		errs = append(errs, configError(errcode.Validation, "BPC_LOG_LEVEL", "must be debug, info, warn or error, got %q", level))
	}
	switch v := strings.ToLower(or(getenv("BPC_LOG_JSON"), "true")); v {
	case "true", "1":
		c.LogJSON = true
	case "false", "0":
	default:
		errs = append(errs, configError(errcode.Validation, "BPC_LOG_JSON", "must be true or false, got %q", v))
	}
	c.Tracing, errs = tracingConfig(getenv, errs)
	c.otlpHeaderValues, errs = otlpHeaderValues(getenv, errs)
	if c.DatabaseURL == "" {
		errs = append(errs, configError(errcode.ConfigMissing, "DATABASE_URL", "is required (postgres://user@host:5432/db); in a checkout, `make doctor`, `make migrate` and `make run` find or start the dev database for you"))
	}
	if c.DatabaseReadURL != "" {
		if _, err := pgconn.ParseConfig(c.DatabaseReadURL); err != nil {
			// Not err's text: it may quote the URL, password and all.
			errs = append(errs, configError(errcode.Validation, "BPC_DATABASE_READ_URL", "is not a valid Postgres URL (postgres://user@host:5432/db)"))
		}
	}
	if c.AdminToken == "" {
		if c.Env != "dev" {
			errs = append(errs, configError(errcode.ConfigMissing, "BPC_ADMIN_TOKEN", "is required outside BPC_ENV=dev"))
		} else {
			c.AdminToken, c.AdminTokenGenerated = newToken(), true
		}
	} else if len(c.AdminToken) < 16 {
		errs = append(errs, configError(errcode.Validation, "BPC_ADMIN_TOKEN", "must be at least 16 characters"))
	}
	if c.SigningKeyBase64 != "" {
		if _, err := sign.ParsePrivateKey(c.SigningKeyBase64); err != nil {
			errs = append(errs, configError(errcode.Validation, "BPC_SIGNING_ED25519_PRIVATE_KEY_BASE64", "%s", err.Error()))
		}
	}
	errs = c.loadKeyEncryptionKey(getenv, errs)
	c.PublicBaseURL, errs = publicBaseURL(getenv("BPC_PUBLIC_BASE_URL"), c.Env, c.HTTPAddr, errs)
	if abs, err := filepath.Abs(c.ExportDir); err == nil {
		// Export paths are recorded in the database and read back by the
		// API, which may run in another working directory.
		c.ExportDir = abs
	}
	if c.UploadsDir != "" {
		// Workers open it for every content_ref; a missing directory is a
		// mistake to report at start, not on the first ingest.
		if abs, err := filepath.Abs(c.UploadsDir); err == nil {
			c.UploadsDir = abs
		}
		if fi, err := os.Stat(c.UploadsDir); err != nil || !fi.IsDir() {
			errs = append(errs, configError(errcode.Validation, "BPC_UPLOADS_DIR", "must be an existing directory, got %q", c.UploadsDir))
		}
	}
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		c.WorkerID = fmt.Sprintf("%s-%d", or(host, "bpc"), os.Getpid())
	}
	c.Tracing.InstanceID = c.WorkerID
	c.Queue.Name = c.WorkerID
	if len(errs) > 0 {
		return c, joinConfigErrors(errs)
	}
	return c, nil
}

// publicBaseURL reads BPC_PUBLIC_BASE_URL: a base of BPC-QR-2 links
// (core/qr's rules; one trailing slash is dropped, anything else that
// breaks a rule is refused), https and required in prod. Without it, dev
// and test link to the listen address (ListenBaseURL), or, for port 0, to
// the address the service will listen on (empty here).
func publicBaseURL(v, env, httpAddr string, errs []error) (string, []error) {
	const name = "BPC_PUBLIC_BASE_URL"
	v = strings.TrimSuffix(strings.TrimSpace(v), "/")
	if v == "" {
		if env == "prod" {
			return "", append(errs, configError(errcode.ConfigMissing, name,
				"is required in prod: the https address the public passport pages are reached at (https://passports.example.com), which every QR code links to"))
		}
		base, err := ListenBaseURL(httpAddr)
		if err != nil {
			return "", append(errs, configError(errcode.Validation, name, "is not set and cannot be derived from BPC_HTTP_ADDR (%s): set it", err.Error()))
		}
		return base, errs
	}
	if err := qr.CheckBaseURL(v); err != nil {
		// The rule, never the value: a URL may carry a credential.
		rule := err
		if cause := errors.Unwrap(err); cause != nil {
			rule = cause
		}
		return "", append(errs, configError(errcode.Validation, name, "%s", rule.Error()))
	}
	if env == "prod" && !strings.HasPrefix(v, "https://") {
		return "", append(errs, configError(errcode.Validation, name, "must be https in prod"))
	}
	return v, errs
}

// ListenBaseURL is the dev base of BPC-QR-2 links for an HTTP listen
// address: http:// and its host and port, localhost for a wildcard or
// empty host (":8080" → http://localhost:8080). Port 0 (a port the system
// picks) gives "" until the address the service listens on is known.
func ListenBaseURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if port == "0" {
		return "", nil
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "localhost"
	}
	base := "http://" + net.JoinHostPort(strings.ToLower(host), port)
	if err := qr.CheckBaseURL(base); err != nil {
		return "", fmt.Errorf("%s is not a base URL for QR codes", base)
	}
	return base, nil
}

// tracingConfig reads the OpenTelemetry variables the service itself acts
// on, the sampler's included. The OTLP exporter's own
// (OTEL_EXPORTER_OTLP_ENDPOINT, _HEADERS, …) and the batch processor's are read by the OpenTelemetry SDK
// from the process environment when tracing is on; of those, only a protocol
// other than OTLP over HTTP is refused here, as a choice the service would
// silently ignore.
func tracingConfig(getenv func(string) string, errs []error) (tracing.Config, []error) {
	var c tracing.Config
	if v := strings.ToLower(strings.TrimSpace(getenv("OTEL_SDK_DISABLED"))); v == "true" {
		return c, errs
	}
	exporters, err := tracing.ParseExporters(getenv("OTEL_TRACES_EXPORTER"))
	if err != nil {
		return c, append(errs, configError(errcode.Validation, "OTEL_TRACES_EXPORTER", "%s", err.Error()))
	}
	c.Exporters = exporters
	c.ServiceName = strings.TrimSpace(getenv("OTEL_SERVICE_NAME"))
	// Read here rather than by the SDK: the service wraps the sampler so
	// that a caller's traceparent cannot force sampling (tracing.Sampler).
	if c.Sampler, err = tracing.ParseSampler(getenv("OTEL_TRACES_SAMPLER"), getenv("OTEL_TRACES_SAMPLER_ARG")); err != nil {
		errs = append(errs, configError(errcode.Validation, "OTEL_TRACES_SAMPLER", "%s", err.Error()))
	}
	if slices.Contains(exporters, tracing.ExporterOTLP) {
		for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
			if v := strings.TrimSpace(getenv(name)); v != "" && v != "http/protobuf" {
				errs = append(errs, configError(errcode.Validation, name, "must be http/protobuf (the service exports OTLP over HTTP), got %q", v))
			}
		}
	}
	return c, errs
}

// otlpHeaderValues returns the values of the OTLP exporter's headers
// ("key=value,…", values percent-encoded), as given and decoded. A list
// the exporter could not parse is refused, naming the variable and the
// entry's position only: the SDK would otherwise report the entry — a
// collector's token, say — on stderr, past the log's redaction.
func otlpHeaderValues(getenv func(string) string, errs []error) ([]string, []error) {
	var out []string
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		list := getenv(name)
		if strings.TrimSpace(list) == "" {
			continue
		}
		for i, pair := range strings.Split(list, ",") {
			k, v, ok := strings.Cut(pair, "=")
			v = strings.TrimSpace(v)
			if ok {
				out = append(out, v)
			}
			dec, err := url.PathUnescape(v)
			if !ok || strings.TrimSpace(k) == "" || err != nil {
				errs = append(errs, configError(errcode.Validation, name,
					"must be comma-separated key=value pairs with percent-encoded values; entry %d is not", i+1))
				continue
			}
			if dec != v {
				out = append(out, dec)
			}
		}
	}
	return out, errs
}

// joinConfigErrors reports every bad variable at once under the first
// error's code ("CONFIG_MISSING: DATABASE_URL: …; VALIDATION_ERROR: BPC_ENV:
// …"): a message carries its own code only when it differs from that one.
func joinConfigErrors(errs []error) error {
	first := errcode.As(errs[0])
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
		if e := errcode.As(err); e != nil && e.Code == first.Code {
			msgs[i] = e.Message
		}
	}
	return &errcode.Error{Code: first.Code, Message: strings.Join(msgs, "; "), Field: first.Field}
}

func newToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// NewLogger returns the service's logger. Whatever it writes — the
// service's lines, River's, pgx errors — passes through a redactor that
// knows the process's own secrets, so that none reaches the log.
func NewLogger(cfg Config, w io.Writer) *slog.Logger {
	opts := redact.New(cfg.secrets()...).HandlerOptions(&slog.HandlerOptions{Level: cfg.LogLevel})
	var h slog.Handler
	if cfg.LogJSON {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	if cfg.Tracing.Enabled() {
		// Lines logged in a span's context carry trace_id and span_id.
		h = tracing.LogHandler(h)
	}
	return slog.New(h)
}

// secrets are the values no log line may hold: the admin token, the
// signing key, the key encryption key and the database passwords (from DATABASE_URL and
// BPC_DATABASE_READ_URL, or wherever
// pgx would find it: PGPASSWORD, a passfile).
func (c Config) secrets() []string {
	out := append([]string{c.AdminToken, c.SigningKeyBase64, c.keyEncryptionKeyBase64}, c.otlpHeaderValues...)
	for _, u := range []string{c.DatabaseURL, c.DatabaseReadURL} {
		if u == "" {
			continue
		}
		if pc, err := pgconn.ParseConfig(u); err == nil {
			out = append(out, pc.Password)
		}
	}
	if u, err := amqp.ParseURI(c.Queue.URL); err == nil {
		out = append(out, u.Password)
	}
	return out
}

// ToolConfig is the configuration of migrate and doctor: a database and logs.
func ToolConfig(getenv func(string) string) (Config, error) {
	cfg := Config{DatabaseURL: getenv("DATABASE_URL"), DatabaseReadURL: strings.TrimSpace(getenv("BPC_DATABASE_READ_URL")), LeaseSeconds: 60, LogLevel: slog.LevelInfo, LogJSON: getenv("BPC_LOG_JSON") != "false"}
	if cfg.DatabaseURL == "" {
		return cfg, configError(errcode.ConfigMissing, "DATABASE_URL", "is required (postgres://user@host:5432/db)")
	}
	return cfg, nil
}
