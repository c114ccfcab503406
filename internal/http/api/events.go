package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
)

type appendEventRequest struct {
	TenantID      string          `json:"tenant_id" format:"uuid"`
	AggregateType string          `json:"aggregate_type"`
	AggregateID   string          `json:"aggregate_id" format:"uuid"`
	EventType     string          `json:"event_type"`
	ActorID       string          `json:"actor_id" format:"uuid"`
	Payload       json.RawMessage `json:"payload"`
}

type appendEventResponse struct {
	EventID          uuid.UUID             `json:"event_id"`
	EventHash        string                `json:"event_hash"`
	AggregateVersion int64                 `json:"aggregate_version"`
	Deliveries       []bpctype.DeliveryRef `json:"deliveries"`
}

// handleAppendEvent appends a custom audit event; subscribed endpoints get
// a delivery and a DELIVER_WEBHOOK job in the same transaction.
func (s *Server) handleAppendEvent(ctx context.Context, raw *jsonInput) (*out[appendEventResponse], error) {
	var in appendEventRequest
	tenantID, aggregateID, err := decodeTenantAnd(ctx, raw.RawBody, &in, &in.TenantID, "aggregate_id", &in.AggregateID)
	if err != nil {
		return nil, err
	}
	if err := passport.CheckAggregateType("aggregate_type", in.AggregateType); err != nil {
		return nil, err
	}
	if err := passport.CheckEventType("event_type", in.EventType); err != nil {
		return nil, err
	}
	if len(in.ActorID) > passport.MaxActorChars {
		return nil, errcode.Invalid("actor_id", "must be at most %d characters", passport.MaxActorChars)
	}
	// A tenant key's events name the key, and may not join the chain of an
	// aggregate the service writes (an API key's, a passport version's);
	// only the platform may say whom it acts for, or append there.
	if actor := actorOf(ctx); actor != domainActor {
		if passport.IsSystemAggregate(in.AggregateType) {
			return nil, errcode.Invalid("aggregate_type", "%s is the service's own: a tenant key may not append events to its aggregates", in.AggregateType)
		}
		if in.ActorID != "" && in.ActorID != actor {
			return nil, errcode.Invalid("actor_id", "is the API key's own (%s) for a tenant key; leave it out", actor)
		}
		in.ActorID = actor
	}
	if err := s.requireTenantExists(ctx, tenantID); err != nil {
		return nil, err
	}
	res, err := inTxValue(ctx, s, func(t passport.Tx) (passport.AppendResult, error) {
		return t.AppendEvent(ctx, passport.EventInput{
			TenantID: tenantID, AggregateType: in.AggregateType, AggregateID: aggregateID,
			EventType: in.EventType, ActorID: in.ActorID, Payload: in.Payload,
		})
	})
	if err != nil {
		return nil, err
	}
	return reply(http.StatusCreated, appendEventResponse{
		EventID: res.Event.EventID, EventHash: res.Event.EventHash,
		AggregateVersion: res.Event.AggregateVersion, Deliveries: res.Deliveries,
	})
}
