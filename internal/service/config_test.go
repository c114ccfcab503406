package service

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/workers"
)

// readVariables returns every environment variable LoadConfig reads when
// given env (each feature switched on, so that its own variables are read
// too), and LoadConfig's result.
func readVariables(env map[string]string) (map[string]bool, error) {
	read := map[string]bool{}
	getenv := func(k string) string {
		read[k] = true
		return env[k]
	}
	_, err := LoadConfig(getenv)
	// What bpc doctor checks besides (the signing variables of prod).
	if err == nil {
		err = CheckSigningConfig(getenv)
	}
	return read, err
}

// everything is a valid configuration that switches every optional
// feature on.
var everything = map[string]string{
	"DATABASE_URL":      "postgres://postgres@127.0.0.1:5432/bpc",
	"BPC_ENV":           "test",
	"BPC_ADMIN_TOKEN":   "0123456789abcdef0123",
	"BPC_QUEUE_ENABLED": "true",
}

// everythingWith returns a getenv over everything, with extra's variables
// added or replaced.
func everythingWith(extra map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := extra[k]; ok {
			return v
		}
		return everything[k]
	}
}

// TestREADMEDocumentsEveryVariable checks that every variable the service
// reads has a row in the configuration table of docs/OPERATIONS.md. Rows may group
// variables with a shared prefix: `BPC_X_ENABLED`, `_WINDOW_MS` documents
// BPC_X_WINDOW_MS (a suffix extends each full name before it in the cell).
func TestREADMEDocumentsEveryVariable(t *testing.T) {
	read, err := readVariables(everything)
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "OPERATIONS.md"))
	require.NoError(t, err)
	documented := map[string]bool{}
	tick := regexp.MustCompile("`([A-Z_][A-Z0-9_]*)`")
	for line := range strings.SplitSeq(string(readme), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
		var prefixes []string
		for _, m := range tick.FindAllStringSubmatch(cell, -1) {
			name := m[1]
			if !strings.HasPrefix(name, "_") {
				documented[name] = true
				if i := strings.LastIndex(name, "_"); i > 0 {
					prefixes = append(prefixes, name[:i])
				}
				continue
			}
			for _, p := range prefixes {
				documented[p+name] = true
			}
		}
	}
	var missing []string
	for name := range read {
		if !documented[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	require.Empty(t, missing, "variables read by LoadConfig without a row in docs/OPERATIONS.md's configuration table")
}

// interpolate finds compose's ${VAR:-default}; $1 is the default.
var interpolate = regexp.MustCompile(`\$\{[A-Z_]+:-([^}]*)\}`)

// required finds compose's ${VAR:?message}, a variable the user must set;
// requiredStandIns are valid values standing in for them.
var (
	required         = regexp.MustCompile(`\$\{([A-Z_]+):\?[^}]*\}`)
	requiredStandIns = map[string]string{"BPC_KEY_ENCRYPTION_KEY": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}
)

// TestComposeConfiguresTheService reads docker-compose.yml: every service
// built from this repository gets a configuration LoadConfig accepts and
// sets no variable the service does not read (a misspelt name is silently
// ignored otherwise); dependencies and volumes name what the file declares.
func TestComposeConfiguresTheService(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docker-compose.yml"))
	require.NoError(t, err)
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Build       any               `yaml:"build"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
			DependsOn   map[string]any    `yaml:"depends_on"`
			Volumes     []string          `yaml:"volumes"`
			Profiles    []string          `yaml:"profiles"`
		} `yaml:"services"`
		Volumes map[string]any `yaml:"volumes"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &compose))
	require.NotEmpty(t, compose.Services)
	ours := 0
	for name, svc := range compose.Services {
		require.True(t, svc.Image != "" || svc.Build != nil, "service %s has neither image nor build", name)
		for dep := range svc.DependsOn {
			require.Contains(t, compose.Services, dep, "service %s depends on an undeclared service", name)
		}
		for _, v := range svc.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if !strings.HasPrefix(src, ".") && !strings.HasPrefix(src, "/") {
				require.Contains(t, compose.Volumes, src, "service %s mounts an undeclared volume", name)
			}
		}
		if svc.Build == nil {
			continue
		}
		ours++
		env := map[string]string{}
		for k, v := range svc.Environment {
			env[k] = interpolate.ReplaceAllString(v, "$1") // compose's ${VAR:-default}, unset
			if m := required.FindStringSubmatch(v); m != nil {
				standIn, ok := requiredStandIns[m[1]]
				require.True(t, ok, "service %s requires %s: add a stand-in value", name, m[1])
				env[k] = required.ReplaceAllString(v, standIn)
			}
		}
		read, err := readVariables(env)
		require.NoError(t, err, "service %s: its environment is not a valid configuration", name)
		for k := range svc.Environment {
			require.True(t, read[k] || strings.HasPrefix(k, "OTEL_"), "service %s sets %s, which the service does not read", name, k)
		}
	}
	require.GreaterOrEqual(t, ours, 3, "migrate, api and worker are built from this repository")
}

// The tenants' default quotas come from the environment, bounded; a value
// out of bounds stops the start naming the variable.
func TestTenantQuotasFromTheEnvironment(t *testing.T) {
	t.Parallel()
	env := func(vars map[string]string) func(string) string {
		return func(k string) string {
			if k == "DATABASE_URL" {
				return "postgres://x"
			}
			return vars[k]
		}
	}
	cfg, err := LoadConfig(env(nil))
	require.NoError(t, err)
	require.Equal(t, passport.DefaultQuotas(), cfg.Quotas)
	require.Equal(t, passport.Quotas{WebhookEndpoints: 50, WebhookSubscriptions: 200, APIKeys: 100, QueuedJobs: 10_000,
		EventPayloadBytes: 65_536, RateLimitRPS: 200, RateLimitBurst: 1000}, cfg.Quotas, "SPEC §15's defaults")

	cfg, err = LoadConfig(env(map[string]string{
		"BPC_TENANT_MAX_WEBHOOK_ENDPOINTS": "5", "BPC_TENANT_MAX_WEBHOOK_SUBSCRIPTIONS": "6",
		"BPC_TENANT_MAX_API_KEYS": "7", "BPC_TENANT_MAX_QUEUED_JOBS": "8", "BPC_EVENT_PAYLOAD_MAX_BYTES": "9",
	}))
	require.NoError(t, err)
	require.Equal(t, []int{5, 6, 7, 8, 9}, []int{cfg.Quotas.WebhookEndpoints, cfg.Quotas.WebhookSubscriptions,
		cfg.Quotas.APIKeys, cfg.Quotas.QueuedJobs, cfg.Quotas.EventPayloadBytes})

	for name, value := range map[string]string{
		"BPC_TENANT_MAX_WEBHOOK_ENDPOINTS": "-1", "BPC_TENANT_MAX_API_KEYS": "many",
		"BPC_TENANT_MAX_QUEUED_JOBS": "2000000000", "BPC_EVENT_PAYLOAD_MAX_BYTES": "0",
	} {
		_, err := LoadConfig(env(map[string]string{name: value}))
		require.Error(t, err, name)
		require.Contains(t, err.Error(), name)
	}
}

// The webhook phase timeouts default to SPEC §15's (connect 5 s, response
// headers 10 s) and lie inside the POST's total: a total shorter than a
// phase caps it.
func TestWebhookTimeouts(t *testing.T) {
	load := func(extra map[string]string) Config {
		c, err := LoadConfig(everythingWith(extra))
		require.NoError(t, err)
		return c
	}
	c := load(nil)
	require.Equal(t, 30*time.Second, c.WebhookTimeout)
	require.Equal(t, workers.Timeouts{Connect: 5 * time.Second, ResponseHeader: 10 * time.Second}, c.WebhookTimeouts())
	c = load(map[string]string{"BPC_WEBHOOK_CONNECT_TIMEOUT_MS": "250", "BPC_WEBHOOK_RESPONSE_HEADER_TIMEOUT_MS": "1500"})
	require.Equal(t, workers.Timeouts{Connect: 250 * time.Millisecond, ResponseHeader: 1500 * time.Millisecond}, c.WebhookTimeouts())
	c = load(map[string]string{"BPC_WEBHOOK_TIMEOUT_MS": "4000"})
	require.Equal(t, workers.Timeouts{Connect: 4 * time.Second, ResponseHeader: 4 * time.Second}, c.WebhookTimeouts())
	for _, bad := range []string{"0", "-1", "x", "600001"} {
		_, err := LoadConfig(everythingWith(map[string]string{"BPC_WEBHOOK_RESPONSE_HEADER_TIMEOUT_MS": bad}))
		require.ErrorContains(t, err, "BPC_WEBHOOK_RESPONSE_HEADER_TIMEOUT_MS", bad)
	}
}

// BPC_WEBHOOK_TENANT_CONCURRENCY caps one tenant's deliveries in flight:
// 4 unless set, 1 to 1000, and a value out of range refuses to start,
// naming the variable.
func TestWebhookTenantConcurrency(t *testing.T) {
	t.Parallel()
	load := func(v string) (Config, error) {
		return LoadConfig(everythingWith(map[string]string{"BPC_WEBHOOK_TENANT_CONCURRENCY": v}))
	}
	c, err := load("")
	require.NoError(t, err)
	require.Equal(t, 4, c.WebhookTenantConcurrency)
	for _, v := range []string{"1", "1000"} {
		c, err := load(v)
		require.NoError(t, err, v)
		require.Equal(t, v, strconv.Itoa(c.WebhookTenantConcurrency))
	}
	for _, v := range []string{"0", "1001", "-1", "four"} {
		_, err := load(v)
		require.ErrorContains(t, err, "BPC_WEBHOOK_TENANT_CONCURRENCY", v)
	}
}

// BPC_PUBLIC_BASE_URL is the base of the QR codes' links: derived from the
// listen address in dev and test, required and https in prod, one
// trailing slash dropped, anything else against core/qr's rules refused
// naming the variable.
func TestPublicBaseURL(t *testing.T) {
	t.Parallel()
	load := func(extra map[string]string) (Config, error) {
		return LoadConfig(everythingWith(extra))
	}
	for _, tt := range []struct{ addr, base, want string }{
		{"", "", "http://localhost:8080"},
		{":9000", "", "http://localhost:9000"},
		{"0.0.0.0:8080", "", "http://localhost:8080"},
		{"[::]:8080", "", "http://localhost:8080"},
		{"127.0.0.1:8081", "", "http://127.0.0.1:8081"},
		{"[::1]:8080", "", "http://[::1]:8080"},
		{"Bpc.Local:8080", "", "http://bpc.local:8080"},
		{"127.0.0.1:0", "", ""}, // the service fills it in once it listens
		{":8080", "https://passports.example.com", "https://passports.example.com"},
		{":8080", " https://passports.example.com/ ", "https://passports.example.com"},
		{":8080", "https://example.com/bpc/", "https://example.com/bpc"},
	} {
		c, err := load(map[string]string{"BPC_HTTP_ADDR": tt.addr, "BPC_PUBLIC_BASE_URL": tt.base})
		require.NoError(t, err, "%q %q", tt.addr, tt.base)
		require.Equal(t, tt.want, c.PublicBaseURL, "%q %q", tt.addr, tt.base)
	}

	c, err := load(map[string]string{"BPC_ENV": "prod", "BPC_PUBLIC_BASE_URL": "https://passports.example.com", "BPC_KEY_ENCRYPTION_KEY": "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE="})
	require.NoError(t, err)
	require.Equal(t, "https://passports.example.com", c.PublicBaseURL)

	for _, tt := range []struct {
		env  map[string]string
		code errcode.Code
		msg  string
	}{
		{map[string]string{"BPC_ENV": "prod", "BPC_KEY_ENCRYPTION_KEY": "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE="}, errcode.ConfigMissing, "BPC_PUBLIC_BASE_URL: is required in prod"},
		{map[string]string{"BPC_ENV": "prod", "BPC_KEY_ENCRYPTION_KEY": "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE=", "BPC_PUBLIC_BASE_URL": "http://passports.example.com"}, errcode.Validation, "BPC_PUBLIC_BASE_URL: must be https in prod"},
		{map[string]string{"BPC_PUBLIC_BASE_URL": "passports.example.com"}, errcode.Validation, "BPC_PUBLIC_BASE_URL: must start with https:// or http://"},
		{map[string]string{"BPC_PUBLIC_BASE_URL": "https://passports.example.com//"}, errcode.Validation, "BPC_PUBLIC_BASE_URL: must not end with a slash"},
		{map[string]string{"BPC_PUBLIC_BASE_URL": "https://user:pw@passports.example.com"}, errcode.Validation, "BPC_PUBLIC_BASE_URL: must have no user info"},
		{map[string]string{"BPC_PUBLIC_BASE_URL": "https://passports.example.com#x"}, errcode.Validation, "BPC_PUBLIC_BASE_URL: must have no query or fragment"},
		{map[string]string{"BPC_PUBLIC_BASE_URL": "https://" + strings.Repeat("a", 200) + ".example.com"}, errcode.Validation, "BPC_PUBLIC_BASE_URL: must be at most 100 bytes"},
		{map[string]string{"BPC_HTTP_ADDR": "localhost"}, errcode.Validation, "BPC_PUBLIC_BASE_URL: is not set and cannot be derived from BPC_HTTP_ADDR"},
	} {
		_, err := load(tt.env)
		require.Error(t, err, "%v", tt.env)
		e := errcode.As(err)
		require.NotNil(t, e, "%v", err)
		require.Equal(t, tt.code, e.Code, "%v", err)
		require.Contains(t, err.Error(), tt.msg)
		require.NotContains(t, err.Error(), "pw@", "a refused value is never echoed: it may hold a credential")
	}
}

// The public answers' cache: 64 MiB and 50 000 versions; an answer lives
// 300 s with LISTEN and 60 s without (nothing else then bounds another
// process's stale answer); a CDN may hold one 60 s. 0 MB turns the cache
// off, 0 s the CDN's holding.
func TestPublicCacheConfig(t *testing.T) {
	load := func(extra map[string]string) Config {
		t.Helper()
		c, err := LoadConfig(everythingWith(extra))
		require.NoError(t, err)
		return c
	}
	c := load(nil)
	require.Equal(t, int64(64<<20), c.PublicCache.MaxBytes)
	require.Equal(t, 50_000, c.PublicCache.MaxEntries)
	require.Equal(t, 300*time.Second, c.PublicCache.MaxAge)
	require.Equal(t, time.Minute, c.PublicCDNMaxAge)
	require.Equal(t, time.Minute, load(map[string]string{"BPC_DB_LISTEN": "false"}).PublicCache.MaxAge)

	c = load(map[string]string{"BPC_PUBLIC_CACHE_MB": "0", "BPC_PUBLIC_CDN_MAX_AGE_S": "0", "BPC_PUBLIC_CACHE_MAX_AGE_S": "30"})
	require.Zero(t, c.PublicCache.MaxBytes)
	require.Zero(t, c.PublicCDNMaxAge)
	require.Equal(t, 30*time.Second, c.PublicCache.MaxAge)
	for _, name := range []string{"BPC_PUBLIC_CACHE_MB", "BPC_PUBLIC_CACHE_ENTRIES", "BPC_PUBLIC_CACHE_MAX_AGE_S", "BPC_PUBLIC_CDN_MAX_AGE_S"} {
		_, err := LoadConfig(everythingWith(map[string]string{name: "-1"}))
		require.ErrorContains(t, err, name)
	}
}
