package api

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/http/access"
	"github.com/bpc-platform/bpc/passport"
)

// AccessMetrics count what the access layer decides (SPEC §10, §15):
// refused credentials by reason, API key lifecycle events, rate-limited
// requests by what was limited (key, tenant, address), and requests
// refused by a tenant quota, by quota.
//
// No series is labelled with a tenant id: tenants are many, and a series
// per tenant per reason would grow without bound. The labels are closed
// sets (reasons, scopes, the quota names of SPEC §15); which tenant was
// refused is in the request's log line (its principal).
type AccessMetrics struct {
	Denied       *prometheus.CounterVec
	KeyEvents    *prometheus.CounterVec
	RateLimited  *prometheus.CounterVec
	QuotaRefused *prometheus.CounterVec
}

// NewAccessMetrics creates the access metrics and registers them with reg.
func NewAccessMetrics(reg prometheus.Registerer) *AccessMetrics {
	f := promauto.With(reg)
	counter := func(name, help, label string) *prometheus.CounterVec {
		return f.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
	}
	m := &AccessMetrics{
		Denied: counter("bpc_auth_denied_total",
			"Requests refused for their credentials, by reason (missing, malformed, unknown, secret, revoked, expired, platform).", "reason"),
		KeyEvents: counter("bpc_api_key_events_total", "API keys created and revoked on this process.", "event"),
		RateLimited: counter("bpc_rate_limited_total",
			"Requests answered 429 by the rate limits, by what was limited (key, tenant, address).", "scope"),
		QuotaRefused: counter("bpc_quota_refused_total",
			"Requests refused by a tenant quota, by quota name (never by tenant).", "quota"),
	}
	// From zero, so that rate() sees the first refusal.
	for _, scope := range []string{"key", "tenant", "address"} {
		m.RateLimited.WithLabelValues(scope)
	}
	for _, quota := range []string{passport.QuotaWebhookEndpoints, passport.QuotaWebhookSubscriptions, passport.QuotaAPIKeys,
		passport.QuotaQueuedJobs, passport.QuotaEventPayloadBytes} {
		m.QuotaRefused.WithLabelValues(quota)
	}
	return m
}

// CountQuotaRefusal counts a request refused by the tenant quota named
// quota (a name of SPEC §15, such as webhook_endpoints or queued_jobs: a
// closed set, never a tenant id). m may be nil (not counted).
func (m *AccessMetrics) CountQuotaRefusal(quota string) {
	if m != nil {
		m.QuotaRefused.WithLabelValues(quota).Inc()
	}
}

// deniedMissing and deniedPlatform are the reasons of a request without a
// bearer token and of one whose token is neither the platform token nor
// shaped like an API key.
const (
	deniedMissing  = "missing"
	deniedPlatform = "platform"
)

// authenticate guards /v1: the platform token (compared in constant time)
// acts for the platform; an API key token for its tenant, through the
// keyring, and within its key's rate limit. Anything else is 401 — or 429
// when the client's address keeps failing, so that guessing tokens is
// throttled like any other client. The principal goes into the context.
//
// An address over its failed-credentials rate is refused before the
// platform token is compared — even the right one, so that a guesser
// learns nothing while throttled — and before an API key the process does
// not know yet is looked up, so guessing costs the database nothing. A key
// the process already knows is checked regardless: its secret cannot be
// guessed, and a flood of bad credentials from a shared address (a NAT, a
// proxy) must not lock out the tenants' keys behind it.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, hasBearer := bearerToken(r.Header.Get("Authorization"))
		switch {
		case !hasBearer:
			s.deny(w, r, bearerChallenge, deniedMissing, noBearerMessage(r.Header.Values("Authorization")))
		case passport.IsKeyToken(token) && s.Keys != nil:
			if !s.Keys.Knows(token) && s.throttled(w, r) {
				return
			}
			p, err := s.Keys.Authenticate(r.Context(), token)
			var denied *access.DeniedError
			switch {
			case errors.As(err, &denied):
				msg := access.UnknownTokenMessage
				if e := errcode.As(err); e != nil {
					msg = e.Message
				}
				s.deny(w, r, bearerChallenge, denied.Reason, msg, slog.String("api_key_id", denied.KeyID.String()), slog.String("tenant_id", denied.TenantID.String()))
			case err != nil:
				s.writeError(w, r, err)
			case !s.admitKey(w, r, p):
			default:
				next.ServeHTTP(w, r.WithContext(withPrincipal(r.Context(), p)))
			}
		case s.throttled(w, r):
		case s.tokenMatches(token):
			next.ServeHTTP(w, r.WithContext(withPrincipal(r.Context(), access.PlatformPrincipal)))
		default:
			s.deny(w, r, bearerChallenge, deniedPlatform, access.UnknownTokenMessage)
		}
	})
}

// authenticateIfSent is authenticate for a route that needs no
// credentials (readiness: probes send none) but trusts a caller more when
// it sends them: a request without an Authorization header goes through
// without a principal; one with it is authenticated, and refused, exactly
// as on /v1, so that it cannot serve to guess tokens. Only a bearer
// credential counts: another scheme (a browser's Basic credentials for River
// UI, sent to every URL of the host) is not one /v1 accepts, and the
// request goes through as an anonymous one, seeing what a probe sees.
func (s *Server) authenticateIfSent(next http.Handler) http.Handler {
	auth := s.authenticate(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !sentBearer(r) {
			next.ServeHTTP(w, r)
			return
		}
		auth.ServeHTTP(w, r)
	})
}

// sentBearer reports whether r carries an Authorization header whose
// scheme is Bearer (any case, RFC 9110 §11.1), or more than one
// Authorization header (which authenticate refuses).
func sentBearer(r *http.Request) bool {
	values := r.Header.Values("Authorization")
	if len(values) > 1 {
		return true
	}
	if len(values) == 0 {
		return false
	}
	scheme, _, _ := strings.Cut(strings.TrimSpace(values[0]), " ")
	return strings.EqualFold(scheme, "Bearer")
}

// throttled answers 429 when the client's address is over its rate of
// failed credentials, before the request's credentials are checked.
func (s *Server) throttled(w http.ResponseWriter, r *http.Request) bool {
	over, wait := s.Limits.Exhausted(deniedBucket(r))
	if over {
		s.limited(w, r, "address", wait)
	}
	return over
}

// actor is who a request acted for, filled in by authenticate for the
// request log line that observe writes after the request.
type actor struct {
	p   access.Principal
	set bool
}

func (a *actor) get() (access.Principal, bool) {
	if a == nil {
		return access.Principal{}, false
	}
	return a.p, a.set
}

// withPrincipal puts p into ctx and notes it for the request log.
func withPrincipal(ctx context.Context, p access.Principal) context.Context {
	if a, ok := ctx.Value(actorKey).(*actor); ok {
		a.p, a.set = p, true
	}
	return access.NewContext(ctx, p)
}

// deny answers a request whose credentials failed: 401 UNAUTHORIZED with
// challenge and msg (what is wrong: no header, not the scheme, a token
// unknown or revoked), or 429 once the client's address is over its rate.
// The refusal is counted, and logged with why (never with the token) when
// it is answered 401: a flood answered 429 is counted, not logged line by
// line.
func (s *Server) deny(w http.ResponseWriter, r *http.Request, challenge, reason, msg string, attrs ...slog.Attr) {
	if s.Access != nil {
		s.Access.Denied.WithLabelValues(reason).Inc()
	}
	if !s.admit(w, r, "address", deniedBucket(r)) {
		return
	}
	if reason != deniedMissing {
		attrs = append(attrs, slog.String("reason", reason), slog.String("remote", clientAddr(r)),
			slog.String("correlation_id", correlationID(r.Context())))
		s.Logger.LogAttrs(r.Context(), slog.LevelWarn, "credentials refused", attrs...)
	}
	w.Header().Set("WWW-Authenticate", challenge)
	s.writeError(w, r, errcode.New(errcode.Unauthorized, "%s", msg))
}

// The challenges of the two guards: /v1 takes a bearer token, River UI
// HTTP Basic (so that a browser can log in).
const (
	bearerChallenge = `Bearer realm="bpc"`
	basicChallenge  = `Basic realm="bpc river ui", charset="UTF-8"`
)

// admit takes a request from client's rate limit bucket; over the limit it
// answers 429 RATE_LIMITED with Retry-After and returns false.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, scope, client string) bool {
	ok, wait := s.Limits.Allow(client)
	if !ok {
		s.limited(w, r, scope, wait)
	}
	return ok
}

// admitKey takes one request from the budgets of p's key and of p's
// tenant (shared by all its keys), both or neither; over either it answers
// 429 RATE_LIMITED with Retry-After and returns false.
func (s *Server) admitKey(w http.ResponseWriter, r *http.Request, p access.Principal) bool {
	d := access.Take(r.Context(), s.Limits, s.TenantLimits, access.Charge{Key: keyBucket(p), Tenant: p.TenantID, N: 1})
	if !d.OK {
		// The refusal's log line names the key and its tenant: the
		// metrics count refusals by scope only.
		withPrincipal(r.Context(), p)
		s.limited(w, r, d.Limited, d.RetryAfter)
	}
	return d.OK
}

// chargeJobs takes the rest of the cost of a request that enqueues jobs
// jobs: a tenant pays one request per job from its tenant's budget, of
// which authentication took one. The key's own limit counts requests (SPEC
// §10): a batch is one of them, as it always was, so a key keeps sending
// batches of up to 1000 jobs while its tenant's budget bounds the jobs all
// its keys enqueue. The platform token is not limited. A batch over the
// tenant's burst can never pass: VALIDATION_ERROR naming jobs, not a 429
// whose Retry-After would lie.
func (s *Server) chargeJobs(ctx context.Context, jobs int) error {
	p, err := principal(ctx)
	if err != nil || p.Platform || jobs <= 1 {
		return err
	}
	d := access.Take(ctx, nil, s.TenantLimits, access.Charge{Tenant: p.TenantID, N: jobs - 1, Paid: 1})
	switch {
	case d.OK:
		return nil
	case d.Never:
		e := errcode.Invalid("jobs", "holds %d jobs, and a batch costs one request per job: the %s's request budget takes at most %d at once (its burst); send at most %d jobs per batch",
			jobs, d.Limited, d.Burst, d.Burst)
		e.Details["limit"], e.Details["limited"] = d.Burst, d.Limited
		return e
	}
	s.countLimited(d.Limited)
	return rateLimited(d.Limited, d.RetryAfter)
}

// keyBucket is the rate limit bucket of an API key.
func keyBucket(p access.Principal) string { return "key:" + p.KeyID.String() }

// limited answers 429 RATE_LIMITED with Retry-After for wait.
func (s *Server) limited(w http.ResponseWriter, r *http.Request, scope string, wait time.Duration) {
	s.countLimited(scope)
	e := rateLimited(scope, wait)
	w.Header().Set("Retry-After", strconv.Itoa(e.Details["retry_after_seconds"].(int)))
	s.writeError(w, r, e)
}

// countLimited counts a request answered 429 by the rate limit of scope.
func (s *Server) countLimited(scope string) {
	if s.Access != nil {
		s.Access.RateLimited.WithLabelValues(scope).Inc()
	}
}

// rateLimited is the RATE_LIMITED error of a request over the rate limit
// of scope (key, tenant, address), to retry after wait; writeError and
// completeErrorBody answer its retry_after_seconds as Retry-After.
func rateLimited(scope string, wait time.Duration) *errcode.Error {
	secs := access.RetryAfterSeconds(wait)
	what := map[string]string{"key": "this API key's", "tenant": "the tenant's", "address": "this address's"}[scope]
	return &errcode.Error{Code: errcode.RateLimited,
		Message: "too many requests for " + what + " rate limit; retry after " + strconv.Itoa(secs) + " s",
		Details: map[string]any{"retry_after_seconds": secs, "limited": scope}}
}

// deniedBucket is the rate limit bucket of an address's failed credentials.
func deniedBucket(r *http.Request) string { return "denied:" + clientAddr(r) }

// limitAddress rate-limits the public routes by client address (a bucket
// apart from the one of failed credentials).
func (s *Server) limitAddress(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.admit(w, r, "address", "public:"+clientAddr(r)) {
			next.ServeHTTP(w, r)
		}
	})
}

// bearerToken returns the token of an "Authorization: Bearer <token>" value.
func bearerToken(authorization string) (string, bool) {
	scheme, token, ok := strings.Cut(authorization, " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// noBearerMessage says what is wrong with Authorization headers that carry
// no bearer token, without echoing them (a token sent under another scheme
// is still a secret).
func noBearerMessage(headers []string) string {
	const how = `send "Authorization: Bearer <token>" (the platform token or an API key)`
	if len(headers) == 0 {
		return "the Authorization header is missing: " + how
	}
	scheme, _, _ := strings.Cut(strings.TrimSpace(headers[0]), " ")
	if strings.EqualFold(scheme, "Bearer") {
		return "the Authorization header's bearer token is empty: " + how
	}
	return "the Authorization header does not use the Bearer scheme: " + how
}

// clientAddr is the address a request came from: the connection's peer.
// X-Forwarded-For is not read: a client sets it at will, and the service
// does not know which proxies to trust.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// principal returns who the request acts for. Every route that reads it is
// behind authenticate; a context without one (a handler called directly)
// is refused rather than trusted.
func principal(ctx context.Context) (access.Principal, error) {
	p, ok := access.FromContext(ctx)
	if !ok {
		return access.Principal{}, errcode.New(errcode.Unauthorized, "a valid bearer token is required")
	}
	return p, nil
}

// allowMethod refuses a reader key's requests that change something.
func (s *Server) allowMethod(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := principal(r.Context())
		if err == nil {
			err = p.Allow(r.Method)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requirePlatform refuses a request that is not the platform's; what
// names the route in the error.
func requirePlatform(ctx context.Context, what string) error {
	p, err := principal(ctx)
	if err != nil {
		return err
	}
	return p.RequirePlatform(what)
}

// platformOnly lets only the platform token through to next.
func (s *Server) platformOnly(what string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := requirePlatform(r.Context(), what); err != nil {
			s.writeError(w, r, err)
			return
		}
		next(w, r)
	}
}

type createKeyRequest struct {
	TenantID  ID         `json:"tenant_id,omitempty" doc:"Required with the platform token; a tenant admin key's own tenant when absent."`
	Name      string     `json:"name" minLength:"1" maxLength:"200"`
	Role      string     `json:"role" enum:"admin,writer,reader"`
	ExpiresAt *time.Time `json:"expires_at,omitempty" doc:"When the key stops working; never when absent."`
}

// handleCreateKey creates an API key and shows its token, once.
func (s *Server) handleCreateKey(ctx context.Context, req *bodyInput[createKeyRequest]) (*out[passport.CreatedKey], error) {
	in := req.Body
	tenantID, err := s.keyTenant(ctx, in.TenantID)
	if err != nil {
		return nil, err
	}
	k, err := inTxValue(ctx, s, func(t passport.Tx) (passport.CreatedKey, error) {
		return passport.CreateAPIKey(ctx, t, s.quotaDefaults(), passport.NewKey{TenantID: tenantID, Name: in.Name, Role: in.Role, ExpiresAt: in.ExpiresAt}, time.Now())
	})
	if err != nil {
		return nil, err
	}
	s.keyEvent(ctx, "created", k.APIKey)
	return reply(http.StatusCreated, k)
}

func (s *Server) handleListKeys(ctx context.Context, req *tenantParam) (*out[items[bpctype.APIKey]], error) {
	tenantID, err := s.keyTenant(ctx, req.TenantID)
	if err != nil {
		return nil, err
	}
	if err := s.requireTenantExists(ctx, tenantID); err != nil {
		return nil, err
	}
	return okItems(s.reads().ListAPIKeys(ctx, tenantID))
}

// handleRevokeKey revokes a key: at once on this process, within the
// keyring's Fresh on every other.
func (s *Server) handleRevokeKey(ctx context.Context, req *idParams) (*struct{}, error) {
	tenantID, err := s.tenantOfID(ctx, req.TenantID, "id", req.ID)
	if err != nil {
		return nil, err
	}
	p, _ := principal(ctx)
	if err := p.ManageKeys(tenantID); err != nil {
		return nil, err
	}
	id := req.ID.UUID()
	k, err := inTxValue(ctx, s, func(t passport.Tx) (bpctype.APIKey, error) {
		return passport.RevokeAPIKey(ctx, t, tenantID, id)
	})
	if err != nil {
		return nil, err
	}
	if s.Keys != nil {
		s.Keys.Forget(k.Prefix)
	}
	s.keyEvent(ctx, "revoked", k)
	return &struct{}{}, nil
}

// keyTenant resolves the tenant whose keys a request manages: the platform
// names any, a tenant admin key only its own.
func (s *Server) keyTenant(ctx context.Context, given ID) (uuid.UUID, error) {
	tenantID, err := tenantOf(ctx, given)
	if err != nil {
		return uuid.Nil, err
	}
	p, _ := principal(ctx)
	return tenantID, p.ManageKeys(tenantID)
}

// keyEvent logs and counts a key's creation or revocation (the audit event
// is in the events table, in the same transaction).
func (s *Server) keyEvent(ctx context.Context, event string, k bpctype.APIKey) {
	if s.Access != nil {
		s.Access.KeyEvents.WithLabelValues(event).Inc()
	}
	p, _ := principal(ctx)
	by := "platform"
	if !p.Platform {
		by = "api_key:" + p.KeyID.String()
	}
	s.Logger.LogAttrs(ctx, slog.LevelInfo, "api key "+event,
		slog.String("api_key_id", k.APIKeyID.String()), slog.String("tenant_id", k.TenantID.String()),
		slog.String("role", k.Role), slog.String("prefix", k.Prefix), slog.String("by", by),
		slog.String("correlation_id", correlationID(ctx)))
}
