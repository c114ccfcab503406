package jobargs

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// KindDeliverWebhook is the SSOT type name and River kind of DeliverWebhookArgs.
const KindDeliverWebhook = "DELIVER_WEBHOOK"

// DeliverWebhookArgs POSTs one event to one webhook endpoint with an HMAC signature.
type DeliverWebhookArgs struct {
	Base
	WebhookDeliveryID uuid.UUID `json:"webhook_delivery_id"`
}

// Kind returns "DELIVER_WEBHOOK".
func (DeliverWebhookArgs) Kind() string { return KindDeliverWebhook }

// InsertOpts puts the job on the QueueWebhooks queue at PriorityLow priority.
func (DeliverWebhookArgs) InsertOpts() river.InsertOpts {
	return insertOpts(QueueWebhooks, PriorityLow)
}

// Validate requires tenant_id and webhook_delivery_id.
func (a DeliverWebhookArgs) Validate() error { return a.validate(a.Refs()) }

// Refs returns the rows the payload names (webhook_delivery_id).
func (a DeliverWebhookArgs) Refs() []Ref {
	return []Ref{
		a.ref("webhook_delivery_id", EntityWebhookDelivery, a.WebhookDeliveryID),
	}
}
