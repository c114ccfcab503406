package api

import (
	"encoding/json"
	"net/http"
	"regexp"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/store"
)

var (
	aggregateTypePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)
	eventTypePattern     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,127}$`)
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
	EventID          uuid.UUID           `json:"event_id"`
	EventHash        string              `json:"event_hash"`
	AggregateVersion int64               `json:"aggregate_version"`
	Deliveries       []store.DeliveryRef `json:"deliveries"`
}

// handleAppendEvent appends a custom audit event; subscribed endpoints get
// a delivery and a DELIVER_WEBHOOK job in the same transaction.
func (s *Server) handleAppendEvent(w http.ResponseWriter, r *http.Request) {
	var in appendEventRequest
	if err := decodeJSON(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	tenantID, err := parseUUID("tenant_id", in.TenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	aggregateID, err := parseUUID("aggregate_id", in.AggregateID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case !aggregateTypePattern.MatchString(in.AggregateType):
		s.writeError(w, r, errcode.Invalid("aggregate_type", "must be 1-64 letters, digits, '_', '.' or '-', starting with a letter"))
		return
	case !eventTypePattern.MatchString(in.EventType):
		s.writeError(w, r, errcode.Invalid("event_type", "must be 1-128 letters, digits, '_', '.' or '-', starting with a letter"))
		return
	case len(in.ActorID) > 200:
		s.writeError(w, r, errcode.Invalid("actor_id", "must be at most 200 characters"))
		return
	}
	if err := s.requireTenantExists(r.Context(), tenantID); err != nil {
		s.writeError(w, r, err)
		return
	}
	var res store.AppendResult
	err = s.Store.InTx(r.Context(), func(tx pgx.Tx) error {
		res, err = s.Store.WithTx(tx).AppendEvent(r.Context(), s.River, store.EventInput{
			TenantID: tenantID, AggregateType: in.AggregateType, AggregateID: aggregateID,
			EventType: in.EventType, ActorID: in.ActorID, Payload: in.Payload,
		})
		return err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, appendEventResponse{
		EventID: res.Event.EventID, EventHash: res.Event.EventHash,
		AggregateVersion: res.Event.AggregateVersion, Deliveries: res.Deliveries,
	})
}
