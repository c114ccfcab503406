package passport

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
)

// The audit events of a tenant's API keys. Their payloads name the key
// (id, name, role, prefix, expiry), never its token.
const (
	AggregateAPIKey = "ApiKey"
	EventKeyCreated = "api_key.created"
	EventKeyRevoked = "api_key.revoked"
)

const (
	maxKeyNameChars = 200
	maxKeyLifetime  = 10 * 365 * 24 * time.Hour
)

// NewKey is a request for an API key.
type NewKey struct {
	TenantID  uuid.UUID
	Name      string
	Role      string
	ExpiresAt *time.Time
}

// CreatedKey is a new key with its token: the only time the token is known.
type CreatedKey struct {
	bpctype.APIKey
	Token string `json:"token"`
}

// CreateAPIKey creates a key for in.TenantID with a new random token,
// stores the token's hash and records api_key.created, unless the tenant
// has its api_keys quota of unrevoked keys already (QUOTA_EXCEEDED,
// counted under the tenant's lock). now is the time an expiry must lie
// after; defaults are the service's quotas.
func CreateAPIKey(ctx context.Context, t Tx, defaults Quotas, in NewKey, now time.Time) (CreatedKey, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" || utf8.RuneCountInString(name) > maxKeyNameChars {
		return CreatedKey{}, errcode.Invalid("name", "must be 1 to %d characters", maxKeyNameChars)
	}
	role, ok := ParseRole(in.Role)
	if !ok {
		return CreatedKey{}, errcode.Invalid("role", "must be one of admin, writer, reader")
	}
	if in.ExpiresAt != nil {
		if !in.ExpiresAt.After(now) {
			return CreatedKey{}, errcode.Invalid("expires_at", "must be in the future")
		}
		if in.ExpiresAt.Sub(now) > maxKeyLifetime {
			return CreatedKey{}, errcode.Invalid("expires_at", "must be within ten years")
		}
	}
	quotas, err := lockTenantQuotas(ctx, t, defaults, in.TenantID)
	if err != nil {
		return CreatedKey{}, err
	}
	n, err := t.Q.CountUnrevokedAPIKeys(ctx, in.TenantID)
	if err != nil {
		return CreatedKey{}, err
	}
	if n >= quotas.APIKeys {
		return CreatedKey{}, QuotaExceeded(QuotaAPIKeys, quotas.APIKeys, n)
	}
	token, prefix := NewToken()
	k, err := t.Q.CreateAPIKey(ctx, bpctype.APIKey{
		TenantID: in.TenantID, Name: name, Role: string(role), Prefix: prefix,
		TokenSHA256: HashToken(token), ExpiresAt: in.ExpiresAt,
	})
	if err != nil {
		return CreatedKey{}, err
	}
	if err := t.Event(ctx, k.TenantID, AggregateAPIKey, k.APIKeyID, EventKeyCreated, keyEvent(k)); err != nil {
		return CreatedKey{}, err
	}
	return CreatedKey{APIKey: k, Token: token}, nil
}

// RevokeAPIKey revokes a tenant's key and records api_key.revoked the
// first time; revoking a revoked key changes nothing.
func RevokeAPIKey(ctx context.Context, t Tx, tenantID, keyID uuid.UUID) (bpctype.APIKey, error) {
	before, err := t.Q.LockAPIKey(ctx, tenantID, keyID)
	if err != nil {
		return bpctype.APIKey{}, err
	}
	k, err := t.Q.RevokeAPIKey(ctx, tenantID, keyID)
	if err != nil || before.RevokedAt != nil {
		return k, err
	}
	return k, t.Event(ctx, k.TenantID, AggregateAPIKey, k.APIKeyID, EventKeyRevoked, keyEvent(k))
}

func keyEvent(k bpctype.APIKey) map[string]any {
	return map[string]any{"api_key_id": k.APIKeyID, "name": k.Name, "role": k.Role, "prefix": k.Prefix,
		"expires_at": k.ExpiresAt, "revoked_at": k.RevokedAt}
}
