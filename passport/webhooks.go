package passport

import (
	"context"
	"net/url"
	"strings"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
)

// NormalizeEndpointURL is the form in which two webhook URLs of a tenant
// are compared: scheme and host lower-cased, the host's trailing dot (the
// same DNS name) and the scheme's default port dropped, the path in its
// one percent-encoding (%7e and ~ alike) and an empty path made "/", an
// empty query ("?") and the fragment (never sent) dropped. The path and
// query stay otherwise as written: a receiver may tell them apart. A URL
// that does not parse is compared as written.
func NormalizeEndpointURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return raw
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host, port := strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	u.Host = host
	if port != "" {
		u.Host += ":" + port
	}
	u.RawPath = ""
	if u.Path == "" {
		u.Path = "/"
	}
	u.ForceQuery = false
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// checkEndpointURLFree refuses, with CONFLICT, a URL that one of the
// tenant's live endpoints other than except already has (in
// NormalizeEndpointURL's form): two endpoints at one URL would double
// every delivery. The caller holds the tenant's quota lock.
func checkEndpointURLFree(ctx context.Context, t Tx, tenantID uuid.UUID, rawURL string, except uuid.UUID) (live int, err error) {
	eps, err := t.Q.LiveWebhookEndpointURLs(ctx, tenantID)
	if err != nil {
		return 0, err
	}
	want := NormalizeEndpointURL(rawURL)
	for _, ep := range eps {
		if ep.WebhookEndpointID != except && NormalizeEndpointURL(ep.URL) == want {
			e := errcode.New(errcode.Conflict, "webhook endpoint %s already has this URL; update or delete it instead", ep.WebhookEndpointID)
			e.Details = map[string]any{"field": "url", "webhook_endpoint_id": ep.WebhookEndpointID}
			return 0, e
		}
	}
	return len(eps), nil
}

// CreateWebhookEndpoint registers a tenant's endpoint (its URL already
// checked against the destination policy) unless the tenant has
// webhook_endpoints live endpoints already (QUOTA_EXCEEDED) or one at
// the same URL (CONFLICT). The tenant's row is locked while it counts,
// so that two concurrent creates at the limit cannot both pass.
func CreateWebhookEndpoint(ctx context.Context, t Tx, defaults Quotas, tenantID uuid.UUID, rawURL, secret string) (bpctype.WebhookEndpoint, error) {
	quotas, err := lockTenantQuotas(ctx, t, defaults, tenantID)
	if err != nil {
		return bpctype.WebhookEndpoint{}, err
	}
	live, err := checkEndpointURLFree(ctx, t, tenantID, rawURL, uuid.Nil)
	if err != nil {
		return bpctype.WebhookEndpoint{}, err
	}
	if live >= quotas.WebhookEndpoints {
		return bpctype.WebhookEndpoint{}, QuotaExceeded(QuotaWebhookEndpoints, quotas.WebhookEndpoints, live)
	}
	return t.Q.CreateWebhookEndpoint(ctx, tenantID, rawURL, secret)
}

// UpdateWebhookEndpoint changes an endpoint's URL (when rawURL != "", not
// to one another live endpoint of the tenant has: CONFLICT) and activity.
func UpdateWebhookEndpoint(ctx context.Context, t Tx, defaults Quotas, tenantID, id uuid.UUID, rawURL string, isActive *bool) (bpctype.WebhookEndpoint, error) {
	if rawURL != "" {
		if _, err := lockTenantQuotas(ctx, t, defaults, tenantID); err != nil {
			return bpctype.WebhookEndpoint{}, err
		}
		if _, err := checkEndpointURLFree(ctx, t, tenantID, rawURL, id); err != nil {
			return bpctype.WebhookEndpoint{}, err
		}
	}
	return t.Q.UpdateWebhookEndpoint(ctx, tenantID, id, rawURL, isActive)
}

// CreateWebhookSubscription subscribes a tenant's endpoint to an event
// type unless the tenant has webhook_subscriptions subscriptions already
// (QUOTA_EXCEEDED), counted under the tenant's lock.
func CreateWebhookSubscription(ctx context.Context, t Tx, defaults Quotas, tenantID, endpointID uuid.UUID, eventType string) (bpctype.WebhookSubscription, error) {
	quotas, err := lockTenantQuotas(ctx, t, defaults, tenantID)
	if err != nil {
		return bpctype.WebhookSubscription{}, err
	}
	n, err := t.Q.CountWebhookSubscriptions(ctx, tenantID)
	if err != nil {
		return bpctype.WebhookSubscription{}, err
	}
	if n >= quotas.WebhookSubscriptions {
		return bpctype.WebhookSubscription{}, QuotaExceeded(QuotaWebhookSubscriptions, quotas.WebhookSubscriptions, n)
	}
	return t.Q.CreateWebhookSubscription(ctx, tenantID, endpointID, eventType)
}

// CheckEventPayload refuses an event payload a caller sends that is
// larger than the tenant's event_payload_bytes: every delivery of the
// event carries it, to every subscribed endpoint.
func CheckEventPayload(field string, payload []byte, quotas Quotas) error {
	if len(payload) > quotas.EventPayloadBytes {
		e := errcode.New(errcode.PayloadTooLarge, "%s: the event payload is %d bytes; at most %d are accepted", field, len(payload), quotas.EventPayloadBytes)
		e.Field = field
		e.Details = map[string]any{"field": field, "quota": QuotaEventPayloadBytes, "limit": quotas.EventPayloadBytes, "used": len(payload)}
		return e
	}
	return nil
}
