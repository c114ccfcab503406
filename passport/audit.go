package passport

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/audit"
	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
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
	// Head, when set, is the aggregate's chain head as the transaction
	// read it already (with the lock of the aggregate's row) or knows it
	// (an aggregate created in the transaction has none), and saves
	// AppendEvent that read. A wrong head cannot fork the chain: the
	// insert then collides with the event at that version
	// (EVENT_VERSION_CONFLICT).
	Head *store.Head
}

// AppendResult is the appended event and the deliveries it fanned out to.
type AppendResult struct {
	Event      bpctype.Event         `json:"event"`
	Deliveries []bpctype.DeliveryRef `json:"deliveries"`
}

// AppendEvent appends an event to its aggregate's hash chain and, in the
// same transaction, creates one PENDING delivery and one DELIVER_WEBHOOK
// job per subscribed active endpoint. Two writers appending to one
// aggregate at once collide: EVENT_VERSION_CONFLICT (retryable).
func (t Tx) AppendEvent(ctx context.Context, in EventInput) (AppendResult, error) {
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
	if in.Head != nil {
		prevVersion, prevHash = in.Head.Version, in.Head.Hash
	} else if prevVersion, prevHash, err = t.Q.ChainHead(ctx, in.TenantID, in.AggregateType, in.AggregateID); err != nil {
		return AppendResult{}, err
	}
	ev := bpctype.Event{
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
	endpoints, err := t.Q.InsertEvent(ctx, ev, in.DeliverTo)
	if err != nil {
		return AppendResult{}, err
	}
	deliveries, err := t.fanOut(ctx, ev, endpoints)
	if err != nil {
		return AppendResult{}, err
	}
	return AppendResult{Event: ev, Deliveries: deliveries}, nil
}

// hashInput is what an event's hash covers.
func hashInput(ev bpctype.Event) audit.Event {
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
func (t Tx) fanOut(ctx context.Context, ev bpctype.Event, endpoints []uuid.UUID) ([]bpctype.DeliveryRef, error) {
	if len(endpoints) == 0 {
		return []bpctype.DeliveryRef{}, nil
	}
	refs := make([]bpctype.DeliveryRef, len(endpoints))
	reqs := make([]EnqueueRequest, len(endpoints))
	for i, endpointID := range endpoints {
		refs[i] = bpctype.DeliveryRef{WebhookDeliveryID: uuid.New(), WebhookEndpointID: endpointID, JobID: uuid.New()}
		reqs[i] = EnqueueRequest{
			JobID: refs[i].JobID,
			Args: &jobargs.DeliverWebhookArgs{
				Base:              jobargs.Base{TenantID: ev.TenantID},
				WebhookDeliveryID: refs[i].WebhookDeliveryID,
			},
		}
	}
	if err := t.Q.CreateDeliveries(ctx, ev.TenantID, ev.EventID, refs); err != nil {
		return nil, err
	}
	if _, err := EnqueueTx(ctx, t.Q, t.Ins, reqs); err != nil {
		return nil, fmt.Errorf("error enqueueing webhook deliveries: %w", err)
	}
	return refs, nil
}

// VerifyAuditChain recomputes every payload hash and event hash of the
// tenant's events and checks each aggregate's versions are contiguous and
// linked to their predecessor. It returns the number of events checked.
func VerifyAuditChain(ctx context.Context, q *store.Queries, tenantID uuid.UUID) (int, error) {
	events, err := q.ChainEvents(ctx, tenantID)
	if err != nil {
		return 0, err
	}
	var prev *bpctype.Event
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
