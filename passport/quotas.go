package passport

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/store"
)

// The names of a tenant's quotas (SPEC §15): the keys of Quotas and of
// QuotaOverrides in JSON, and the quota an error's details name.
const (
	QuotaWebhookEndpoints     = "webhook_endpoints"
	QuotaWebhookSubscriptions = "webhook_subscriptions"
	QuotaAPIKeys              = "api_keys"
	QuotaQueuedJobs           = "queued_jobs"
	QuotaEventPayloadBytes    = "event_payload_bytes"
	QuotaRateLimitRPS         = "rate_limit_rps"
	QuotaRateLimitBurst       = "rate_limit_burst"
)

// QuotaNames lists every quota a tenant has, in the order of Quotas.
var QuotaNames = []string{QuotaWebhookEndpoints, QuotaWebhookSubscriptions, QuotaAPIKeys,
	QuotaQueuedJobs, QuotaEventPayloadBytes, QuotaRateLimitRPS, QuotaRateLimitBurst}

// Quotas are a tenant's effective limits: the service's defaults (the
// BPC_TENANT_* environment) with the tenant's overrides applied
// (TenantQuotas). Every member is a limit a tenant may reach, not pass.
type Quotas struct {
	WebhookEndpoints     int `json:"webhook_endpoints" doc:"Live (not deleted) webhook endpoints."`
	WebhookSubscriptions int `json:"webhook_subscriptions" doc:"Webhook subscriptions."`
	APIKeys              int `json:"api_keys" doc:"Unrevoked API keys (expired ones count until revoked)."`
	QueuedJobs           int `json:"queued_jobs" doc:"Jobs in status QUEUED; an enqueue past it is refused whole (429)."`
	EventPayloadBytes    int `json:"event_payload_bytes" doc:"Bytes of one event payload a caller sends (413 past it)."`
	RateLimitRPS         int `json:"rate_limit_rps" doc:"Requests per second all the tenant's keys share."`
	RateLimitBurst       int `json:"rate_limit_burst" doc:"Burst of the tenant's shared request budget."`
}

// DefaultQuotas are SPEC §15's defaults, before the environment changes them.
func DefaultQuotas() Quotas {
	return Quotas{
		WebhookEndpoints: 50, WebhookSubscriptions: 200, APIKeys: 100,
		QueuedJobs: 10_000, EventPayloadBytes: 65_536,
		RateLimitRPS: 200, RateLimitBurst: 1000,
	}
}

// QuotaOverrides are the limits the platform set for one tenant; an absent
// member is the service's default. The bounds are those of the
// environment variables.
type QuotaOverrides struct {
	WebhookEndpoints     *int `json:"webhook_endpoints,omitempty" minimum:"0" maximum:"100000"`
	WebhookSubscriptions *int `json:"webhook_subscriptions,omitempty" minimum:"0" maximum:"1000000"`
	APIKeys              *int `json:"api_keys,omitempty" minimum:"0" maximum:"100000"`
	QueuedJobs           *int `json:"queued_jobs,omitempty" minimum:"0" maximum:"1000000000"`
	EventPayloadBytes    *int `json:"event_payload_bytes,omitempty" minimum:"1" maximum:"67108864"`
	RateLimitRPS         *int `json:"rate_limit_rps,omitempty" minimum:"0" maximum:"1000000"`
	RateLimitBurst       *int `json:"rate_limit_burst,omitempty" minimum:"1" maximum:"1000000"`
}

// quotaBounds are QuotaOverrides' bounds, checked by SetTenantQuotas
// whoever calls it (the tags only document them to the API).
var quotaBounds = map[string][2]int{
	QuotaWebhookEndpoints:     {0, 100_000},
	QuotaWebhookSubscriptions: {0, 1_000_000},
	QuotaAPIKeys:              {0, 100_000},
	QuotaQueuedJobs:           {0, 1_000_000_000},
	QuotaEventPayloadBytes:    {1, 64 << 20},
	QuotaRateLimitRPS:         {0, 1_000_000},
	QuotaRateLimitBurst:       {1, 1_000_000},
}

// QuotaBounds returns the lowest and highest limit quota may be set to,
// and whether quota is a quota's name.
func QuotaBounds(quota string) (lo, hi int, ok bool) {
	b, ok := quotaBounds[quota]
	return b[0], b[1], ok
}

// quotaMember is one quota: its name, its limit in a Quotas and its
// override in a QuotaOverrides.
type quotaMember struct {
	name  string
	limit *int
	over  **int
}

// members pairs each quota's name with its member in q and in o, in the
// order of QuotaNames.
func (q *Quotas) members(o *QuotaOverrides) []quotaMember {
	return []quotaMember{
		{QuotaWebhookEndpoints, &q.WebhookEndpoints, &o.WebhookEndpoints},
		{QuotaWebhookSubscriptions, &q.WebhookSubscriptions, &o.WebhookSubscriptions},
		{QuotaAPIKeys, &q.APIKeys, &o.APIKeys},
		{QuotaQueuedJobs, &q.QueuedJobs, &o.QueuedJobs},
		{QuotaEventPayloadBytes, &q.EventPayloadBytes, &o.EventPayloadBytes},
		{QuotaRateLimitRPS, &q.RateLimitRPS, &o.RateLimitRPS},
		{QuotaRateLimitBurst, &q.RateLimitBurst, &o.RateLimitBurst},
	}
}

// Apply returns q with o's members in place of q's.
func (q Quotas) Apply(o QuotaOverrides) Quotas {
	for _, m := range q.members(&o) {
		if *m.over != nil {
			*m.limit = **m.over
		}
	}
	return q
}

// Limit returns the limit of the quota named name (0 for no such quota).
func (q Quotas) Limit(name string) int {
	var o QuotaOverrides
	for _, m := range q.members(&o) {
		if m.name == name {
			return *m.limit
		}
	}
	return 0
}

// decodeOverrides reads a tenant's stored overrides; a name this release
// does not know (a newer release wrote it) is ignored, not an error.
func decodeOverrides(tenantID uuid.UUID, raw []byte) (QuotaOverrides, error) {
	var o QuotaOverrides
	if len(raw) == 0 {
		return o, nil
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return o, fmt.Errorf("error decoding quotas of tenant %s: %w", tenantID, err)
	}
	return o, nil
}

// TenantQuotas returns the tenant's effective quotas: defaults with the
// overrides the platform set for it (SetTenantQuotas). A tenant that does
// not exist is NOT_FOUND. It is one indexed read; callers on a hot path
// cache it (QueueGate does).
func TenantQuotas(ctx context.Context, q *store.Queries, defaults Quotas, tenantID uuid.UUID) (Quotas, error) {
	raw, err := q.TenantQuotaOverrides(ctx, tenantID)
	if err != nil {
		return Quotas{}, err
	}
	o, err := decodeOverrides(tenantID, raw)
	if err != nil {
		return Quotas{}, err
	}
	return defaults.Apply(o), nil
}

// TenantOverrides returns the overrides the platform set for the tenant
// (SetTenantQuotas), nil members where it set none: for a caller whose
// defaults are finer than Quotas' integers (the request budget's rate).
func TenantOverrides(ctx context.Context, q *store.Queries, tenantID uuid.UUID) (QuotaOverrides, error) {
	raw, err := q.TenantQuotaOverrides(ctx, tenantID)
	if err != nil {
		return QuotaOverrides{}, err
	}
	return decodeOverrides(tenantID, raw)
}

// lockTenantQuotas is TenantQuotas that also locks the tenant's row until
// the transaction ends, so that count quotas are checked and their rows
// inserted without a concurrent create of the same tenant in between.
// FOR NO KEY UPDATE, not FOR UPDATE: the foreign keys of the tenant's
// other inserts (jobs, events) take FOR KEY SHARE, which it does not block.
func lockTenantQuotas(ctx context.Context, t Tx, defaults Quotas, tenantID uuid.UUID) (Quotas, error) {
	raw, err := t.Q.LockTenantQuotas(ctx, tenantID)
	if err != nil {
		return Quotas{}, err
	}
	o, err := decodeOverrides(tenantID, raw)
	if err != nil {
		return Quotas{}, err
	}
	return defaults.Apply(o), nil
}

// SetTenantQuotas sets the platform's overrides of a tenant's quotas:
// each member of set replaces the tenant's override of that quota, each
// name in reset drops it (back to the default), the others stay. A limit
// out of its bounds or an unknown name in reset is a VALIDATION_ERROR
// naming it. It returns the tenant's effective quotas.
func SetTenantQuotas(ctx context.Context, t Tx, defaults Quotas, tenantID uuid.UUID, set QuotaOverrides, reset []string) (Quotas, error) {
	var probe Quotas
	for _, m := range probe.members(&set) {
		if *m.over == nil {
			continue
		}
		lo, hi, _ := QuotaBounds(m.name)
		if v := **m.over; v < lo || v > hi {
			return Quotas{}, errcode.Invalid("quotas."+m.name, "must be %d to %d, got %d", lo, hi, v)
		}
	}
	for i, name := range reset {
		if _, _, ok := QuotaBounds(name); !ok {
			return Quotas{}, errcode.Invalid(fmt.Sprintf("reset[%d]", i), "unknown quota %q (known: %v)", name, QuotaNames)
		}
	}
	raw, err := t.Q.LockTenantQuotas(ctx, tenantID)
	if err != nil {
		return Quotas{}, err
	}
	cur, err := decodeOverrides(tenantID, raw)
	if err != nil {
		return Quotas{}, err
	}
	given, stored := probe.members(&set), probe.members(&cur)
	for i, m := range stored {
		if slices.Contains(reset, m.name) {
			*m.over = nil
		}
		if *given[i].over != nil {
			*m.over = *given[i].over
		}
	}
	b, err := json.Marshal(cur)
	if err != nil {
		return Quotas{}, fmt.Errorf("error encoding quotas of tenant %s: %w", tenantID, err)
	}
	if err := t.Q.SetTenantQuotaOverrides(ctx, tenantID, b); err != nil {
		return Quotas{}, err
	}
	if err := t.Event(ctx, tenantID, AggregateTenant, tenantID, EventTenantQuotasSet, cur); err != nil {
		return Quotas{}, err
	}
	return defaults.Apply(cur), nil
}

// The audit event of a change of a tenant's quotas; its payload is the
// tenant's overrides after the change.
const (
	AggregateTenant      = "Tenant"
	EventTenantQuotasSet = "tenant.quotas_set"
)

// QuotaExceeded is the error of a quota reached: QUOTA_EXCEEDED whose
// details name the quota, its limit and the use counted, the shape the
// API answers ({"quota", "limit", "used"}).
func QuotaExceeded(quota string, limit, used int) *errcode.Error {
	e := errcode.New(errcode.QuotaExceeded, "quota %s of %d reached (%d in use)", quota, limit, used)
	e.Details = map[string]any{"quota": quota, "limit": limit, "used": used}
	return e
}
