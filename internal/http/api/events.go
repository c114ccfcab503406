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
	TenantID      ID              `json:"tenant_id,omitempty" doc:"Required with the platform token; a tenant API key's own tenant when absent."`
	AggregateType string          `json:"aggregate_type" pattern:"^[A-Za-z][A-Za-z0-9_.-]{0,63}$" patternDescription:"1-64 letters, digits, '_', '.' or '-', starting with a letter"`
	AggregateID   ID              `json:"aggregate_id"`
	EventType     string          `json:"event_type" pattern:"^[A-Za-z][A-Za-z0-9_.-]{0,127}$" patternDescription:"1-128 letters, digits, '_', '.' or '-', starting with a letter"`
	ActorID       string          `json:"actor_id,omitempty" maxLength:"200" doc:"Who acted: any text the platform token chooses (admin-api when absent). A tenant key's events name the key itself (api_key:<api_key_id>); leave it out or send exactly that."`
	Payload       json.RawMessage `json:"payload" doc:"Any JSON value, stored as given."`
}

type appendEventResponse struct {
	EventID          uuid.UUID             `json:"event_id"`
	EventHash        string                `json:"event_hash"`
	AggregateVersion int64                 `json:"aggregate_version"`
	Deliveries       []bpctype.DeliveryRef `json:"deliveries"`
}

// appendAttempts bounds the transactions one append runs while racing
// appends to its aggregate take the version it read.
const appendAttempts = 3

// handleAppendEvent appends a custom audit event; subscribed endpoints get
// a delivery and a DELIVER_WEBHOOK job in the same transaction.
func (s *Server) handleAppendEvent(ctx context.Context, raw *bodyInput[appendEventRequest]) (*out[appendEventResponse], error) {
	in := raw.Body
	aggregateID := in.AggregateID.UUID()
	tenantID, err := tenantOf(ctx, in.TenantID)
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
	quotas, err := passport.TenantQuotas(ctx, s.Store, s.quotaDefaults(), tenantID)
	if err != nil {
		return nil, err
	}
	if err := passport.CheckEventPayload("payload", in.Payload, quotas); err != nil {
		return nil, err
	}
	// The event's deliveries are jobs of the tenant: a full backlog
	// refuses it as it refuses any enqueue.
	admitted, err := s.queued.Admit(ctx, s.Store, s.quotaDefaults(), []uuid.UUID{tenantID})
	if err != nil {
		return nil, err
	}
	var res passport.AppendResult
	for attempt := 1; ; attempt++ {
		res, err = inTxValue(ctx, s, func(t passport.Tx) (passport.AppendResult, error) {
			return t.AppendEvent(ctx, passport.EventInput{
				TenantID: tenantID, AggregateType: in.AggregateType, AggregateID: aggregateID,
				EventType: in.EventType, ActorID: in.ActorID, Payload: in.Payload,
			})
		})
		// Another append took the version: the transaction rolled back,
		// and a new one reads the new head of the chain. Bounded, so that
		// a crowd of racers gets 409 EVENT_VERSION_CONFLICT to retry
		// rather than holding connections.
		if errcode.CodeOf(err) != errcode.EventVersionConflict || attempt == appendAttempts {
			break
		}
	}
	if err != nil {
		admitted.Done(nil)
		return nil, err
	}
	admitted.DoneInserted(tenantID, len(res.Deliveries))
	return reply(http.StatusCreated, appendEventResponse{
		EventID: res.Event.EventID, EventHash: res.Event.EventHash,
		AggregateVersion: res.Event.AggregateVersion, Deliveries: res.Deliveries,
	})
}
