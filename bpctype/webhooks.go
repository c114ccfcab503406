package bpctype

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
)

// Webhook delivery statuses.
const (
	DeliveryPending   = "PENDING"
	DeliveryDelivered = "DELIVERED"
	DeliveryFailed    = "FAILED"
)

// DeliveryStatuses lists every webhook delivery status.
var DeliveryStatuses = []string{DeliveryPending, DeliveryDelivered, DeliveryFailed}

// WebhookEndpoint is a URL that receives a tenant's events. Its secret is
// never serialised.
type WebhookEndpoint struct {
	WebhookEndpointID uuid.UUID  `db:"webhook_endpoint_id" json:"webhook_endpoint_id"`
	TenantID          uuid.UUID  `db:"tenant_id" json:"tenant_id"`
	URL               string     `db:"url" json:"url"`
	Secret            string     `db:"secret" json:"-"`
	IsActive          bool       `db:"is_active" json:"is_active"`
	CreatedAt         time.Time  `db:"created_at" json:"created_at"`
	DeletedAt         *time.Time `db:"deleted_at" json:"deleted_at,omitempty"`
}

// LogValue keeps the secret out of structured logs.
func (e WebhookEndpoint) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("webhook_endpoint_id", e.WebhookEndpointID.String()),
		slog.String("url", e.URL))
}

// String keeps the secret out of fmt output (%v and %+v).
func (e WebhookEndpoint) String() string {
	return fmt.Sprintf("webhook endpoint %s (%s)", e.WebhookEndpointID, e.URL)
}

// WebhookSubscription subscribes an endpoint to one event type (or '*').
type WebhookSubscription struct {
	WebhookSubscriptionID uuid.UUID `db:"webhook_subscription_id" json:"webhook_subscription_id"`
	TenantID              uuid.UUID `db:"tenant_id" json:"tenant_id"`
	WebhookEndpointID     uuid.UUID `db:"webhook_endpoint_id" json:"webhook_endpoint_id"`
	EventType             string    `db:"event_type" json:"event_type"`
	CreatedAt             time.Time `db:"created_at" json:"created_at"`
}

// WebhookDelivery is one event sent (or to be sent) to one endpoint.
type WebhookDelivery struct {
	WebhookDeliveryID uuid.UUID       `db:"webhook_delivery_id" json:"webhook_delivery_id"`
	TenantID          uuid.UUID       `db:"tenant_id" json:"tenant_id"`
	WebhookEndpointID uuid.UUID       `db:"webhook_endpoint_id" json:"webhook_endpoint_id"`
	EventID           uuid.UUID       `db:"event_id" json:"event_id"`
	JobID             *uuid.UUID      `db:"job_id" json:"job_id"`
	Status            string          `db:"status" json:"status"`
	Attempts          int32           `db:"attempts" json:"attempts"`
	HTTPStatus        *int32          `db:"http_status" json:"http_status"`
	ResponseHeaders   json.RawMessage `db:"response_headers" json:"response_headers"`
	ResponseBody      []byte          `db:"response_body" json:"-"`
	ErrorCode         *string         `db:"error_code" json:"error_code"`
	ErrorMessage      *string         `db:"error_message" json:"error_message"`
	LastAttemptAt     *time.Time      `db:"last_attempt_at" json:"last_attempt_at"`
	DeliveredAt       *time.Time      `db:"delivered_at" json:"delivered_at"`
	CreatedAt         time.Time       `db:"created_at" json:"created_at"`
	UpdatedAt         time.Time       `db:"updated_at" json:"updated_at"`
}

// MarshalJSON adds the response body as text (it is stored bounded).
func (d WebhookDelivery) MarshalJSON() ([]byte, error) {
	type plain WebhookDelivery
	var body *string
	if d.ResponseBody != nil {
		s := string(d.ResponseBody)
		body = &s
	}
	return json.Marshal(struct {
		plain
		ResponseBody *string `json:"response_body"`
	}{plain(d), body})
}

// DeliveryAttempt is the outcome of one POST to an endpoint.
type DeliveryAttempt struct {
	// Status is the delivery's status after this attempt.
	Status          string
	HTTPStatus      *int
	ResponseHeaders map[string]string
	ResponseBody    []byte
	ErrorCode       string
	ErrorMessage    string
	At              time.Time
}
