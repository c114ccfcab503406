package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
)

const endpointColumns = `webhook_endpoint_id, tenant_id, url, secret, is_active, created_at, deleted_at`

// CreateWebhookEndpoint stores an endpoint and its secret.
func (q *Queries) CreateWebhookEndpoint(ctx context.Context, tenantID uuid.UUID, url, secret string) (bpctype.WebhookEndpoint, error) {
	return create[bpctype.WebhookEndpoint](ctx, q.db, "webhook endpoint", "tenant", tenantID, `INSERT INTO webhook_endpoints
		(webhook_endpoint_id, tenant_id, url, secret) VALUES ($1, $2, $3, $4)
		RETURNING `+endpointColumns, uuid.New(), tenantID, url, secret)
}

// ListWebhookEndpoints returns the tenant's endpoints that are not deleted.
func (q *Queries) ListWebhookEndpoints(ctx context.Context, tenantID uuid.UUID) ([]bpctype.WebhookEndpoint, error) {
	return list[bpctype.WebhookEndpoint](ctx, q.db, "webhook endpoints",
		`SELECT `+endpointColumns+` FROM webhook_endpoints
		WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY created_at, webhook_endpoint_id`, tenantID)
}

// GetWebhookEndpoint returns the tenant's endpoint, deleted or not.
func (q *Queries) GetWebhookEndpoint(ctx context.Context, tenantID, id uuid.UUID) (bpctype.WebhookEndpoint, error) {
	return getOne[bpctype.WebhookEndpoint](ctx, q.db, "webhook endpoint", id,
		`SELECT `+endpointColumns+` FROM webhook_endpoints
		WHERE tenant_id = $1 AND webhook_endpoint_id = $2`, tenantID, id)
}

// UpdateWebhookEndpoint changes an endpoint's URL (when url != "") and activity.
func (q *Queries) UpdateWebhookEndpoint(ctx context.Context, tenantID, id uuid.UUID, url string, isActive *bool) (bpctype.WebhookEndpoint, error) {
	return getOne[bpctype.WebhookEndpoint](ctx, q.db, "webhook endpoint", id,
		`UPDATE webhook_endpoints SET
			url = COALESCE(NULLIF($3, ''), url),
			is_active = COALESCE($4, is_active)
		WHERE tenant_id = $1 AND webhook_endpoint_id = $2 AND deleted_at IS NULL
		RETURNING `+endpointColumns, tenantID, id, url, isActive)
}

// DeleteWebhookEndpoint soft-deletes an endpoint and drops its
// subscriptions; its deliveries stay as history and pending ones fail.
func (q *Queries) DeleteWebhookEndpoint(ctx context.Context, tenantID, id uuid.UUID) error {
	tag, err := q.db.Exec(ctx, `UPDATE webhook_endpoints SET deleted_at = now(), is_active = false
		WHERE tenant_id = $1 AND webhook_endpoint_id = $2 AND deleted_at IS NULL`, tenantID, id)
	if err != nil {
		return fmt.Errorf("error deleting webhook endpoint %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return errcode.Wrap(errcode.NotFound, ErrNotFound, "webhook endpoint %s not found", id)
	}
	if _, err := q.db.Exec(ctx, `DELETE FROM webhook_subscriptions WHERE tenant_id = $1 AND webhook_endpoint_id = $2`, tenantID, id); err != nil {
		return fmt.Errorf("error deleting subscriptions of endpoint %s: %w", id, err)
	}
	return nil
}

const subscriptionColumns = `webhook_subscription_id, tenant_id, webhook_endpoint_id, event_type, created_at`

// CreateWebhookSubscription subscribes the tenant's endpoint to an event type.
func (q *Queries) CreateWebhookSubscription(ctx context.Context, tenantID, endpointID uuid.UUID, eventType string) (bpctype.WebhookSubscription, error) {
	sub, err := queryOne[bpctype.WebhookSubscription](ctx, q.db, `INSERT INTO webhook_subscriptions (webhook_subscription_id, tenant_id, webhook_endpoint_id, event_type)
		SELECT $1, $2, webhook_endpoint_id, $4 FROM webhook_endpoints
		WHERE tenant_id = $2 AND webhook_endpoint_id = $3 AND deleted_at IS NULL
		RETURNING `+subscriptionColumns, uuid.New(), tenantID, endpointID, eventType)
	if IsUniqueViolation(err, "webhook_subscriptions_uniq") {
		return bpctype.WebhookSubscription{}, errcode.New(errcode.InvalidState, "endpoint %s is already subscribed to %s", endpointID, eventType)
	}
	if err != nil {
		return bpctype.WebhookSubscription{}, notFound(err, "webhook endpoint", endpointID)
	}
	return sub, nil
}

// ListWebhookSubscriptions returns the tenant's subscriptions, optionally of one endpoint.
func (q *Queries) ListWebhookSubscriptions(ctx context.Context, tenantID uuid.UUID, endpointID *uuid.UUID) ([]bpctype.WebhookSubscription, error) {
	return list[bpctype.WebhookSubscription](ctx, q.db, "webhook subscriptions",
		`SELECT `+subscriptionColumns+` FROM webhook_subscriptions
		WHERE tenant_id = $1 AND ($2::uuid IS NULL OR webhook_endpoint_id = $2)
		ORDER BY created_at, webhook_subscription_id`, tenantID, endpointID)
}

// DeleteWebhookSubscription removes a subscription.
func (q *Queries) DeleteWebhookSubscription(ctx context.Context, tenantID, id uuid.UUID) error {
	tag, err := q.db.Exec(ctx, `DELETE FROM webhook_subscriptions WHERE tenant_id = $1 AND webhook_subscription_id = $2`, tenantID, id)
	if err != nil {
		return fmt.Errorf("error deleting webhook subscription %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return errcode.Wrap(errcode.NotFound, ErrNotFound, "webhook subscription %s not found", id)
	}
	return nil
}

const deliveryColumns = `webhook_delivery_id, tenant_id, webhook_endpoint_id, event_id, job_id, status, attempts,
	http_status, response_headers, response_body, error_code, error_message, last_attempt_at, delivered_at,
	created_at, updated_at`

// GetWebhookDelivery returns the tenant's delivery.
func (q *Queries) GetWebhookDelivery(ctx context.Context, tenantID, id uuid.UUID) (bpctype.WebhookDelivery, error) {
	return getOne[bpctype.WebhookDelivery](ctx, q.db, "webhook delivery", id,
		`SELECT `+deliveryColumns+` FROM webhook_deliveries
		WHERE tenant_id = $1 AND webhook_delivery_id = $2`, tenantID, id)
}

// RecordDeliveryAttempt stores the outcome of an attempt on the delivery.
func (q *Queries) RecordDeliveryAttempt(ctx context.Context, tenantID, id uuid.UUID, a bpctype.DeliveryAttempt) error {
	var headers []byte
	if a.ResponseHeaders != nil {
		var err error
		if headers, err = json.Marshal(a.ResponseHeaders); err != nil {
			return fmt.Errorf("error encoding response headers: %w", err)
		}
	}
	var deliveredAt *time.Time
	if a.Status == bpctype.DeliveryDelivered {
		deliveredAt = &a.At
	}
	tag, err := q.db.Exec(ctx, `UPDATE webhook_deliveries SET
			status = $3, attempts = attempts + 1, http_status = $4, response_headers = $5,
			response_body = $6, error_code = NULLIF($7, ''), error_message = NULLIF($8, ''),
			last_attempt_at = $9, delivered_at = $10, updated_at = now()
		WHERE tenant_id = $1 AND webhook_delivery_id = $2`,
		tenantID, id, a.Status, a.HTTPStatus, headers, a.ResponseBody, a.ErrorCode, a.ErrorMessage, a.At, deliveredAt)
	if err != nil {
		return fmt.Errorf("error recording delivery attempt %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return errcode.Wrap(errcode.NotFound, ErrNotFound, "webhook delivery %s not found", id)
	}
	return nil
}

// DeliveryToSend is everything a delivery attempt needs.
type DeliveryToSend struct {
	Delivery bpctype.WebhookDelivery
	Endpoint bpctype.WebhookEndpoint
	Event    bpctype.Event
}

// LoadDeliveryToSend loads a delivery with its endpoint and event.
func (q *Queries) LoadDeliveryToSend(ctx context.Context, tenantID, id uuid.UUID) (DeliveryToSend, error) {
	d, err := q.GetWebhookDelivery(ctx, tenantID, id)
	if err != nil {
		return DeliveryToSend{}, err
	}
	ep, err := q.GetWebhookEndpoint(ctx, tenantID, d.WebhookEndpointID)
	if err != nil {
		return DeliveryToSend{}, err
	}
	ev, err := q.GetEvent(ctx, tenantID, d.EventID)
	if err != nil {
		return DeliveryToSend{}, err
	}
	return DeliveryToSend{Delivery: d, Endpoint: ep, Event: ev}, nil
}
