package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
)

// TenantQuotaOverrides returns the tenant's quota overrides as stored (a
// JSON object of quota name to limit).
func (q *Queries) TenantQuotaOverrides(ctx context.Context, tenantID uuid.UUID) ([]byte, error) {
	return q.tenantQuotas(ctx, tenantID, "")
}

// LockTenantQuotas is TenantQuotaOverrides that locks the tenant's row FOR
// NO KEY UPDATE until the transaction ends: the lock that serialises a
// tenant's count-quota checks and its quota changes, while the foreign
// keys of its other inserts (FOR KEY SHARE) pass.
func (q *Queries) LockTenantQuotas(ctx context.Context, tenantID uuid.UUID) ([]byte, error) {
	return q.tenantQuotas(ctx, tenantID, " FOR NO KEY UPDATE")
}

func (q *Queries) tenantQuotas(ctx context.Context, tenantID uuid.UUID, lock string) ([]byte, error) {
	var raw []byte
	err := q.db.QueryRow(ctx, `SELECT quotas FROM tenants WHERE tenant_id = $1`+lock, tenantID).Scan(&raw)
	if err != nil {
		return nil, notFound(err, "tenant", tenantID)
	}
	return raw, nil
}

// SetTenantQuotaOverrides stores the tenant's quota overrides (a JSON object).
func (q *Queries) SetTenantQuotaOverrides(ctx context.Context, tenantID uuid.UUID, raw []byte) error {
	tag, err := q.db.Exec(ctx, `UPDATE tenants SET quotas = $2 WHERE tenant_id = $1`, tenantID, raw)
	if err != nil {
		return fmt.Errorf("error setting quotas of tenant %s: %w", tenantID, err)
	}
	if tag.RowsAffected() == 0 {
		return errcode.Wrap(errcode.NotFound, ErrNotFound, "tenant %s not found", tenantID)
	}
	return nil
}

// EndpointURL is a live webhook endpoint's id and URL.
type EndpointURL struct {
	WebhookEndpointID uuid.UUID `db:"webhook_endpoint_id"`
	URL               string    `db:"url"`
}

// LiveWebhookEndpointURLs returns the URLs of the tenant's endpoints that
// are not deleted: what the endpoint count quota counts and a new URL is
// compared with.
func (q *Queries) LiveWebhookEndpointURLs(ctx context.Context, tenantID uuid.UUID) ([]EndpointURL, error) {
	return list[EndpointURL](ctx, q.db, "webhook endpoint urls",
		`SELECT webhook_endpoint_id, url FROM webhook_endpoints
		WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY created_at, webhook_endpoint_id`, tenantID)
}

// CountWebhookSubscriptions counts the tenant's webhook subscriptions.
func (q *Queries) CountWebhookSubscriptions(ctx context.Context, tenantID uuid.UUID) (int, error) {
	return q.count(ctx, "webhook subscriptions", `SELECT count(*) FROM webhook_subscriptions WHERE tenant_id = $1`, tenantID)
}

// CountUnrevokedAPIKeys counts the tenant's keys that are not revoked,
// expired ones included.
func (q *Queries) CountUnrevokedAPIKeys(ctx context.Context, tenantID uuid.UUID) (int, error) {
	return q.count(ctx, "api keys", `SELECT count(*) FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL`, tenantID)
}

// CountQueuedJobs counts the tenant's QUEUED jobs, up to limit: the count
// stops there, so that a backlog far past a quota costs no more than one
// at it. The tenant's live rows are read through its index, most of them
// finished until River's cleaner moves them to the history.
func (q *Queries) CountQueuedJobs(ctx context.Context, tenantID uuid.UUID, limit int) (int, error) {
	return q.count(ctx, "queued jobs", `SELECT count(*) FROM (
			SELECT 1 FROM jobs_live WHERE tenant_id = $1 AND status = 'QUEUED' LIMIT $2) AS q`, tenantID, limit)
}

// TenantUsage is what a tenant uses of its quotas, counted now.
type TenantUsage struct {
	QueuedJobs           int `json:"queued_jobs" db:"queued_jobs" doc:"Jobs in status QUEUED."`
	RunningJobs          int `json:"running_jobs" db:"running_jobs" doc:"Jobs in status RUNNING."`
	WebhookEndpoints     int `json:"webhook_endpoints" db:"webhook_endpoints" doc:"Live (not deleted) webhook endpoints."`
	WebhookSubscriptions int `json:"webhook_subscriptions" db:"webhook_subscriptions" doc:"Webhook subscriptions."`
	APIKeys              int `json:"api_keys" db:"api_keys" doc:"Unrevoked API keys."`
}

// GetTenantUsage counts what the tenant uses, in one statement (one
// snapshot); a tenant that does not exist is NOT_FOUND.
func (q *Queries) GetTenantUsage(ctx context.Context, tenantID uuid.UUID) (TenantUsage, error) {
	return getOne[TenantUsage](ctx, q.db, "tenant", tenantID, `SELECT
		(SELECT count(*) FROM jobs_live j WHERE j.tenant_id = t.tenant_id AND j.status = 'QUEUED') AS queued_jobs,
		(SELECT count(*) FROM jobs_live j WHERE j.tenant_id = t.tenant_id AND j.status = 'RUNNING') AS running_jobs,
		(SELECT count(*) FROM webhook_endpoints e WHERE e.tenant_id = t.tenant_id AND e.deleted_at IS NULL) AS webhook_endpoints,
		(SELECT count(*) FROM webhook_subscriptions s WHERE s.tenant_id = t.tenant_id) AS webhook_subscriptions,
		(SELECT count(*) FROM api_keys k WHERE k.tenant_id = t.tenant_id AND k.revoked_at IS NULL) AS api_keys
		FROM tenants t WHERE t.tenant_id = $1`, tenantID)
}

func (q *Queries) count(ctx context.Context, what, sql string, args ...any) (int, error) {
	var n int
	if err := q.db.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("error counting %s: %w", what, err)
	}
	return n, nil
}
