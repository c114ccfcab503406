// Package access decides who an API request acts for and how fast it may go.
//
// # Principals
//
// A request acts for the platform operator, who holds BPC_ADMIN_TOKEN and
// may do everything for every tenant, or for one tenant through one of the
// tenant's API keys. A key has a role:
//
//   - reader: reads only (GET, HEAD);
//   - writer: every tenant route but key management;
//   - admin: a writer that also manages its tenant's keys.
//
// A key implies its tenant: a request may leave tenant_id out, a tenant_id
// that names another tenant is refused (FORBIDDEN), and ids of another
// tenant's rows are not found, as for the platform operator with the wrong
// tenant_id. Routes that are the platform's own (tenants, metrics, River UI)
// take the platform token only.
//
// # Keys
//
// What a key is (its roles, its token bpc_<prefix>_<secret>, the SHA-256 that
// is stored of it) is the domain's, in package passport; this package
// authenticates requests with keys. Stored hashes are compared in constant
// time. A Keyring resolves
// tokens; it trusts a key row it read for at most Fresh (500 ms), so that a
// revocation or an expiry made by any process takes effect on every process
// within a second, at the cost of one indexed read per key and Fresh while
// the key is in use. The time a key was last used is kept in memory and
// written in batches (Keyring.Run), never once per request.
//
// # Rate limits
//
// A Limiter is a token bucket per key (API keys) or per client address
// (public routes, and requests whose credentials fail), from
// golang.org/x/time/rate. The buckets live in the process: a fleet of N
// API processes admits up to N times the configured rate for a client whose
// requests are spread across them.
package access

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
)

// Principal is who a request acts for: the platform operator, or a tenant
// through one of its keys.
type Principal struct {
	// Platform is set for the platform token; the other members are then
	// zero.
	Platform bool
	TenantID uuid.UUID
	KeyID    uuid.UUID
	Role     passport.Role
}

// PlatformPrincipal is the principal of the platform token.
var PlatformPrincipal = Principal{Platform: true}

// Allow checks that p may make a request with method on a tenant route:
// a reader only reads.
func (p Principal) Allow(method string) error {
	if p.Platform || p.Role == passport.RoleAdmin || p.Role == passport.RoleWriter {
		return nil
	}
	if p.Role == passport.RoleReader && (method == http.MethodGet || method == http.MethodHead) {
		return nil
	}
	return errcode.New(errcode.Forbidden, "a %s key only reads", p.Role)
}

// ManageKeys checks that p may create, list and revoke the keys of tenantID.
func (p Principal) ManageKeys(tenantID uuid.UUID) error {
	if p.Platform || (p.Role == passport.RoleAdmin && p.TenantID == tenantID) {
		return nil
	}
	return errcode.New(errcode.Forbidden, "managing api keys takes the platform token or an admin key of the tenant")
}

// RequirePlatform checks that p is the platform operator; what names the
// route in the error.
func (p Principal) RequirePlatform(what string) error {
	if p.Platform {
		return nil
	}
	return errcode.New(errcode.Forbidden, "%s takes the platform token", what)
}

// Tenant returns the tenant a request acts on. given is the tenant_id the
// request names (uuid.Nil when it names none). The platform operator must
// name one; a key's tenant is implied, and naming another one is FORBIDDEN.
func (p Principal) Tenant(given uuid.UUID) (uuid.UUID, error) {
	switch {
	case p.Platform && given == uuid.Nil:
		return uuid.Nil, errcode.Invalid("tenant_id", "is required")
	case p.Platform:
		return given, nil
	case given == uuid.Nil || given == p.TenantID:
		return p.TenantID, nil
	default:
		return uuid.Nil, errcode.New(errcode.Forbidden, "tenant_id names another tenant than the api key's")
	}
}

type principalKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal ctx carries; ok is false when there is
// none (the request was not authenticated).
func FromContext(ctx context.Context) (p Principal, ok bool) {
	p, ok = ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// String names p for logs: "platform", or "api_key:<id> tenant:<id> role:<role>".
func (p Principal) String() string {
	if p.Platform {
		return "platform"
	}
	return "api_key:" + p.KeyID.String() + " tenant:" + p.TenantID.String() + " role:" + string(p.Role)
}
