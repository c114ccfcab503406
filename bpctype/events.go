package bpctype

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Event is a stored audit event.
type Event struct {
	EventID          uuid.UUID       `db:"event_id" json:"event_id"`
	TenantID         uuid.UUID       `db:"tenant_id" json:"tenant_id"`
	AggregateType    string          `db:"aggregate_type" json:"aggregate_type"`
	AggregateID      uuid.UUID       `db:"aggregate_id" json:"aggregate_id"`
	AggregateVersion int64           `db:"aggregate_version" json:"aggregate_version"`
	EventType        string          `db:"event_type" json:"event_type"`
	OccurredAt       time.Time       `db:"occurred_at" json:"occurred_at"`
	ActorID          *string         `db:"actor_id" json:"actor_id"`
	Payload          json.RawMessage `db:"payload" json:"payload"`
	PayloadHash      string          `db:"payload_hash" json:"payload_hash"`
	PrevEventHash    *string         `db:"prev_event_hash" json:"prev_event_hash"`
	EventHash        string          `db:"event_hash" json:"event_hash"`
}

// DeliveryRef names a webhook delivery created by an event and its job.
type DeliveryRef struct {
	WebhookDeliveryID uuid.UUID `json:"webhook_delivery_id"`
	WebhookEndpointID uuid.UUID `json:"webhook_endpoint_id"`
	JobID             uuid.UUID `json:"job_id"`
}
