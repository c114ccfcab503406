package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
)

const apiKeyColumns = `api_key_id, tenant_id, name, role, prefix, token_sha256, created_at, expires_at, revoked_at, last_used_at`

// CreateAPIKey inserts k (its id, tenant, name, role, prefix, hash and
// expiry) and returns the stored row.
func (q *Queries) CreateAPIKey(ctx context.Context, k bpctype.APIKey) (bpctype.APIKey, error) {
	if k.APIKeyID == uuid.Nil {
		k.APIKeyID = uuid.New()
	}
	return create[bpctype.APIKey](ctx, q.db, "api key", "tenant", k.TenantID,
		`INSERT INTO api_keys (api_key_id, tenant_id, name, role, prefix, token_sha256, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+apiKeyColumns,
		k.APIKeyID, k.TenantID, k.Name, k.Role, k.Prefix, k.TokenSHA256, k.ExpiresAt)
}

// ListAPIKeys returns a tenant's keys, revoked and expired ones included,
// newest first.
func (q *Queries) ListAPIKeys(ctx context.Context, tenantID uuid.UUID) ([]bpctype.APIKey, error) {
	return list[bpctype.APIKey](ctx, q.db, "api keys",
		`SELECT `+apiKeyColumns+` FROM api_keys WHERE tenant_id = $1
		ORDER BY created_at DESC, api_key_id DESC`, tenantID)
}

// RevokeAPIKey revokes a tenant's key and returns it; revoking a revoked key
// keeps its first revocation time.
func (q *Queries) RevokeAPIKey(ctx context.Context, tenantID, keyID uuid.UUID) (bpctype.APIKey, error) {
	return getOne[bpctype.APIKey](ctx, q.db, "api key", keyID,
		`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now())
		WHERE tenant_id = $1 AND api_key_id = $2 RETURNING `+apiKeyColumns, tenantID, keyID)
}

// GetAPIKey returns a tenant's key.
func (q *Queries) GetAPIKey(ctx context.Context, tenantID, keyID uuid.UUID) (bpctype.APIKey, error) {
	return q.apiKey(ctx, tenantID, keyID, "")
}

// LockAPIKey returns a tenant's key locked FOR UPDATE.
func (q *Queries) LockAPIKey(ctx context.Context, tenantID, keyID uuid.UUID) (bpctype.APIKey, error) {
	return q.apiKey(ctx, tenantID, keyID, " FOR UPDATE")
}

func (q *Queries) apiKey(ctx context.Context, tenantID, keyID uuid.UUID, lock string) (bpctype.APIKey, error) {
	return getOne[bpctype.APIKey](ctx, q.db, "api key", keyID,
		`SELECT `+apiKeyColumns+` FROM api_keys WHERE tenant_id = $1 AND api_key_id = $2`+lock, tenantID, keyID)
}

// APIKeyByPrefix returns the key with the given token prefix. It is the one
// lookup not scoped by tenant: the tenant is what the key establishes.
func (q *Queries) APIKeyByPrefix(ctx context.Context, prefix string) (bpctype.APIKey, error) {
	return getOne[bpctype.APIKey](ctx, q.db, "api key", prefix,
		`SELECT `+apiKeyColumns+` FROM api_keys WHERE prefix = $1`, prefix)
}

// TouchAPIKeys records when keys were last used, in one statement for a
// batch of keys; a time older than the one stored changes nothing.
func (q *Queries) TouchAPIKeys(ctx context.Context, used map[uuid.UUID]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, 0, len(used))
	times := make([]time.Time, 0, len(used))
	for id, at := range used {
		ids = append(ids, id)
		times = append(times, at)
	}
	_, err := q.db.Exec(ctx, `UPDATE api_keys k SET last_used_at = u.at
		FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, at)
		WHERE k.api_key_id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`, ids, times)
	if err != nil {
		return fmt.Errorf("error recording api key use: %w", err)
	}
	return nil
}
