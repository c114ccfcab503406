package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/core/audit"
	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/jobargs"
)

// EventInput is an audit event to append.
type EventInput struct {
	TenantID      uuid.UUID
	AggregateType string
	AggregateID   uuid.UUID
	EventType     string
	// ActorID is who caused the event; empty for the system.
	ActorID string
	// Payload is any JSON without fractional numbers; it is stored canonical.
	Payload json.RawMessage
	// DeliverTo, when set, sends the event to this endpoint only, whatever
	// the subscriptions say (used by ping).
	DeliverTo *uuid.UUID
}

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

// AppendResult is the appended event and the deliveries it fanned out to.
type AppendResult struct {
	Event      Event         `json:"event"`
	Deliveries []DeliveryRef `json:"deliveries"`
}

const eventColumns = `event_id, tenant_id, aggregate_type, aggregate_id, aggregate_version, event_type,
	occurred_at, actor_id, payload, payload_hash, prev_event_hash, event_hash`

// AppendEvent appends an event to its aggregate's hash chain and, in the same
// transaction, creates one PENDING delivery and one DELIVER_WEBHOOK job per
// subscribed active endpoint. Two writers appending to one aggregate at once
// collide: EVENT_VERSION_CONFLICT (retryable).
func (q *Queries) AppendEvent(ctx context.Context, ins Inserter, in EventInput) (AppendResult, error) {
	payload := in.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("{}")
	}
	canonical, err := canonjson.Canonicalize(payload)
	if err != nil {
		return AppendResult{}, errcode.Invalid("payload", "%s", err.Error())
	}

	var prevVersion int64
	var prevHash *string
	err = q.db.QueryRow(ctx, `SELECT aggregate_version, event_hash FROM events
		WHERE tenant_id = $1 AND aggregate_type = $2 AND aggregate_id = $3
		ORDER BY aggregate_version DESC LIMIT 1`,
		in.TenantID, in.AggregateType, in.AggregateID).Scan(&prevVersion, &prevHash)
	if err != nil && err != pgx.ErrNoRows {
		return AppendResult{}, fmt.Errorf("error reading aggregate %s %s head: %w", in.AggregateType, in.AggregateID, err)
	}

	ev := Event{
		EventID:          uuid.New(),
		TenantID:         in.TenantID,
		AggregateType:    in.AggregateType,
		AggregateID:      in.AggregateID,
		AggregateVersion: prevVersion + 1,
		EventType:        in.EventType,
		OccurredAt:       time.Now().UTC().Truncate(time.Microsecond),
		Payload:          canonical,
		PayloadHash:      hash.SHA256Hex(canonical),
		PrevEventHash:    prevHash,
	}
	if in.ActorID != "" {
		ev.ActorID = &in.ActorID
	}
	ev.EventHash, err = audit.Hash(hashInput(ev))
	if err != nil {
		return AppendResult{}, err
	}
	// One round trip appends the event and reads the endpoints it goes to:
	// every subscribed active one, or the one named by DeliverTo.
	endpointsSQL := `SELECT DISTINCT e.webhook_endpoint_id
		FROM webhook_subscriptions s
		JOIN webhook_endpoints e ON e.webhook_endpoint_id = s.webhook_endpoint_id
		WHERE s.tenant_id = $2 AND (s.event_type = $6 OR s.event_type = '*')
			AND e.tenant_id = $2 AND e.is_active AND e.deleted_at IS NULL
		ORDER BY e.webhook_endpoint_id`
	args := []any{ev.EventID, ev.TenantID, ev.AggregateType, ev.AggregateID, ev.AggregateVersion, ev.EventType,
		ev.OccurredAt, ev.ActorID, []byte(ev.Payload), ev.PayloadHash, ev.PrevEventHash, ev.EventHash}
	if in.DeliverTo != nil {
		endpointsSQL = `SELECT webhook_endpoint_id FROM webhook_endpoints
			WHERE tenant_id = $2 AND webhook_endpoint_id = $13 AND deleted_at IS NULL`
		args = append(args, *in.DeliverTo)
	}
	endpoints, err := collect(ctx, q.db, "endpoints to deliver to", pgx.RowTo[uuid.UUID], `WITH appended AS (
			INSERT INTO events (`+eventColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12))
		`+endpointsSQL, args...)
	switch {
	case IsUniqueViolation(err, "events_aggregate_version_uniq"):
		return AppendResult{}, errcode.Wrap(errcode.EventVersionConflict, err,
			"aggregate %s %s was appended to concurrently", in.AggregateType, in.AggregateID)
	case IsForeignKeyViolation(err):
		return AppendResult{}, errcode.New(errcode.NotFound, "tenant %s not found", in.TenantID)
	case err != nil:
		return AppendResult{}, fmt.Errorf("error appending event: %w", err)
	}

	deliveries, err := q.fanOut(ctx, ins, ev, endpoints)
	if err != nil {
		return AppendResult{}, err
	}
	return AppendResult{Event: ev, Deliveries: deliveries}, nil
}

func hashInput(ev Event) audit.Event {
	in := audit.Event{
		TenantID:         ev.TenantID.String(),
		AggregateType:    ev.AggregateType,
		AggregateID:      ev.AggregateID.String(),
		AggregateVersion: ev.AggregateVersion,
		EventType:        ev.EventType,
		OccurredAt:       ev.OccurredAt,
		PayloadHash:      ev.PayloadHash,
	}
	if ev.ActorID != nil {
		in.ActorID = *ev.ActorID
	}
	if ev.PrevEventHash != nil {
		in.PrevEventHash = *ev.PrevEventHash
	}
	return in
}

// fanOut creates a new event's deliveries to endpoints and their
// DELIVER_WEBHOOK jobs.
func (q *Queries) fanOut(ctx context.Context, ins Inserter, ev Event, endpoints []uuid.UUID) ([]DeliveryRef, error) {
	if len(endpoints) == 0 {
		return []DeliveryRef{}, nil
	}
	refs := make([]DeliveryRef, len(endpoints))
	reqs := make([]EnqueueRequest, len(endpoints))
	for i, endpointID := range endpoints {
		refs[i] = DeliveryRef{WebhookDeliveryID: uuid.New(), WebhookEndpointID: endpointID, JobID: uuid.New()}
		if _, err := q.db.Exec(ctx, `INSERT INTO webhook_deliveries
			(webhook_delivery_id, tenant_id, webhook_endpoint_id, event_id, job_id)
			VALUES ($1, $2, $3, $4, $5)`,
			refs[i].WebhookDeliveryID, ev.TenantID, endpointID, ev.EventID, refs[i].JobID); err != nil {
			return nil, fmt.Errorf("error creating webhook delivery: %w", err)
		}
		reqs[i] = EnqueueRequest{
			JobID: refs[i].JobID,
			Args: &jobargs.DeliverWebhookArgs{
				Base:              jobargs.Base{TenantID: ev.TenantID},
				WebhookDeliveryID: refs[i].WebhookDeliveryID,
			},
		}
	}
	if _, err := q.EnqueueTx(ctx, ins, reqs); err != nil {
		return nil, fmt.Errorf("error enqueueing webhook deliveries: %w", err)
	}
	return refs, nil
}

// GetEvent returns the tenant's event.
func (q *Queries) GetEvent(ctx context.Context, tenantID, eventID uuid.UUID) (Event, error) {
	return getOne[Event](ctx, q.db, "event", eventID,
		`SELECT `+eventColumns+` FROM events WHERE tenant_id = $1 AND event_id = $2`, tenantID, eventID)
}

// VerifyAuditChain recomputes every payload hash and event hash of the
// tenant's events and checks each aggregate's versions are contiguous and
// linked to their predecessor. It returns the number of events checked.
func (q *Queries) VerifyAuditChain(ctx context.Context, tenantID uuid.UUID) (int, error) {
	events, err := list[Event](ctx, q.db, "events of tenant "+tenantID.String(), `SELECT `+eventColumns+` FROM events
		WHERE tenant_id = $1 ORDER BY aggregate_type, aggregate_id, aggregate_version`, tenantID)
	if err != nil {
		return 0, err
	}
	var prev *Event
	for i := range events {
		ev := &events[i]
		if prev != nil && (prev.AggregateType != ev.AggregateType || prev.AggregateID != ev.AggregateID) {
			prev = nil
		}
		wantVersion, wantPrev := int64(1), ""
		if prev != nil {
			wantVersion, wantPrev = prev.AggregateVersion+1, prev.EventHash
		}
		gotPrev := ""
		if ev.PrevEventHash != nil {
			gotPrev = *ev.PrevEventHash
		}
		switch {
		case ev.AggregateVersion != wantVersion:
			return i, fmt.Errorf("event %s: aggregate version %d, expected %d", ev.EventID, ev.AggregateVersion, wantVersion)
		case gotPrev != wantPrev:
			return i, fmt.Errorf("event %s: prev_event_hash does not link to the previous event", ev.EventID)
		case hash.SHA256Hex(ev.Payload) != ev.PayloadHash:
			return i, fmt.Errorf("event %s: payload does not match payload_hash", ev.EventID)
		}
		want, err := audit.Hash(hashInput(*ev))
		if err != nil {
			return i, err
		}
		if want != ev.EventHash {
			return i, fmt.Errorf("event %s: event_hash does not match its fields", ev.EventID)
		}
		prev = ev
	}
	return len(events), nil
}
