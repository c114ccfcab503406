package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/webhook/destination"
)

// Ping events are appended to the endpoint's own aggregate.
const (
	pingAggregateType = "WebhookEndpoint"
	pingEventType     = "webhook.ping"
)

// validateEndpointURL accepts absolute http(s) URLs (https only in prod)
// whose destination the webhook destination policy admits: refused are
// hosts that are, spell or resolve to a non-public address (SPEC §12). It
// may resolve the host, so it runs after the request's other checks.
func (s *Server) validateEndpointURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return errcode.Invalid("url", "is required")
	case len(raw) > 2048:
		return errcode.Invalid("url", "must be at most 2048 characters")
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return errcode.Invalid("url", "must be an absolute http or https URL")
	case s.Config.Env == "prod" && u.Scheme != "https":
		return errcode.Invalid("url", "must use https in production")
	case u.User != nil:
		return errcode.Invalid("url", "must not carry credentials; the HMAC secret authenticates deliveries")
	}
	policy := s.Config.WebhookDestinations
	if policy == nil {
		policy = &destination.Policy{}
	}
	err = policy.CheckURL(ctx, raw)
	var denied *destination.DeniedError
	var bad *destination.HostError
	switch {
	case errors.As(err, &denied):
		hint := "webhook destinations must be public"
		if denied.Reason == destination.ReasonNonCanonical {
			hint = "write an IPv4 address as four decimal numbers a.b.c.d"
		}
		e := errcode.Invalid("url", "%s; %s", denied.Error(), hint)
		e.Details["reason"] = denied.Reason
		return e
	case errors.As(err, &bad):
		return errcode.Invalid("url", "%s", bad.Reason)
	case err != nil:
		return errcode.Invalid("url", "is not an allowed webhook destination")
	}
	return nil
}

type createEndpointRequest struct {
	TenantID string `json:"tenant_id" format:"uuid"`
	URL      string `json:"url"`
	Secret   string `json:"secret"`
}

func (s *Server) handleCreateEndpoint(w http.ResponseWriter, r *http.Request) {
	var in createEndpointRequest
	if err := decodeJSON(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	tenantID, err := parseUUID("tenant_id", in.TenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(in.Secret) < 16 || len(in.Secret) > 512 {
		s.writeError(w, r, errcode.Invalid("secret", "must be 16 to 512 characters"))
		return
	}
	if err := s.validateEndpointURL(r.Context(), in.URL); err != nil {
		s.writeError(w, r, err)
		return
	}
	ep, err := s.Store.CreateWebhookEndpoint(r.Context(), tenantID, in.URL, in.Secret)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, ep)
}

func (s *Server) handleListEndpoints(w http.ResponseWriter, r *http.Request) {
	tenantID, err := queryTenant(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	eps, err := s.Store.ListWebhookEndpoints(r.Context(), tenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": eps})
}

// tenantAndID reads the tenant_id query parameter and the {id} path parameter.
func tenantAndID(r *http.Request) (uuid.UUID, uuid.UUID, error) {
	tenantID, err := queryTenant(r)
	if err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	id, err := pathUUID(r, "id")
	return tenantID, id, err
}

func (s *Server) handleGetEndpoint(w http.ResponseWriter, r *http.Request) {
	tenantID, id, err := tenantAndID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ep, err := s.Store.GetWebhookEndpoint(r.Context(), tenantID, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	breaker, err := s.Store.GetWebhookBreaker(r.Context(), tenantID, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, endpointResponse{WebhookEndpoint: ep, Breaker: breaker.View(time.Now())})
}

// endpointResponse is an endpoint with its circuit breaker (CLOSED with
// zeros when it has none yet).
type endpointResponse struct {
	store.WebhookEndpoint
	Breaker store.BreakerView `json:"breaker"`
}

type updateEndpointRequest struct {
	URL      string `json:"url" required:"false" doc:"New URL; unchanged when empty."`
	IsActive *bool  `json:"is_active" required:"false" doc:"Pause (false) or resume (true) deliveries; unchanged when absent."`
}

func (s *Server) handleUpdateEndpoint(w http.ResponseWriter, r *http.Request) {
	tenantID, id, err := tenantAndID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var in updateEndpointRequest
	if err := decodeJSON(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.URL != "" {
		if err := s.validateEndpointURL(r.Context(), in.URL); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	ep, err := s.Store.UpdateWebhookEndpoint(r.Context(), tenantID, id, in.URL, in.IsActive)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ep)
}

func (s *Server) handleDeleteEndpoint(w http.ResponseWriter, r *http.Request) {
	tenantID, id, err := tenantAndID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	err = s.Store.InTx(r.Context(), func(tx pgx.Tx) error {
		return s.Store.WithTx(tx).DeleteWebhookEndpoint(r.Context(), tenantID, id)
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// webhookDelivery documents store.WebhookDelivery as its MarshalJSON
// writes it: with the endpoint's response body as text.
type webhookDelivery struct {
	store.WebhookDelivery
	ResponseBody *string `json:"response_body" doc:"The endpoint's answer, as text (stored bounded)."`
}

type pingResponse struct {
	EventID           uuid.UUID `json:"event_id"`
	WebhookDeliveryID uuid.UUID `json:"webhook_delivery_id"`
	JobID             uuid.UUID `json:"job_id"`
}

// handlePingEndpoint sends a webhook.ping event to one endpoint, whatever
// its subscriptions.
func (s *Server) handlePingEndpoint(w http.ResponseWriter, r *http.Request) {
	tenantID, id, err := tenantAndID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	var res store.AppendResult
	err = s.Store.InTx(ctx, func(tx pgx.Tx) error {
		ep, err := s.Store.WithTx(tx).GetWebhookEndpoint(ctx, tenantID, id)
		if err != nil {
			return err
		}
		if ep.DeletedAt != nil {
			return errcode.New(errcode.NotFound, "webhook endpoint %s not found", id)
		}
		res, err = s.Store.WithTx(tx).AppendEvent(ctx, s.River, store.EventInput{
			TenantID: tenantID, AggregateType: pingAggregateType, AggregateID: id,
			EventType: pingEventType, ActorID: "admin-api",
			Payload: []byte(`{"ping":true}`), DeliverTo: &id,
		})
		return err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(res.Deliveries) != 1 {
		s.writeError(w, r, errcode.New(errcode.InvalidState, "webhook endpoint %s is inactive", id))
		return
	}
	writeJSON(w, http.StatusAccepted, pingResponse{
		EventID: res.Event.EventID, WebhookDeliveryID: res.Deliveries[0].WebhookDeliveryID, JobID: res.Deliveries[0].JobID,
	})
}

type createSubscriptionRequest struct {
	TenantID          string `json:"tenant_id" format:"uuid"`
	WebhookEndpointID string `json:"webhook_endpoint_id" format:"uuid"`
	EventType         string `json:"event_type"`
}

func (s *Server) handleCreateSubscription(w http.ResponseWriter, r *http.Request) {
	var in createSubscriptionRequest
	if err := decodeJSON(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	tenantID, err := parseUUID("tenant_id", in.TenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	endpointID, err := parseUUID("webhook_endpoint_id", in.WebhookEndpointID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if in.EventType != "*" && !eventTypePattern.MatchString(in.EventType) {
		s.writeError(w, r, errcode.Invalid("event_type", "must be an event type or '*' for all"))
		return
	}
	sub, err := s.Store.CreateWebhookSubscription(r.Context(), tenantID, endpointID, in.EventType)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, sub)
}

func (s *Server) handleListSubscriptions(w http.ResponseWriter, r *http.Request) {
	tenantID, err := queryTenant(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var endpointID *uuid.UUID
	if v := strings.TrimSpace(r.URL.Query().Get("webhook_endpoint_id")); v != "" {
		id, err := parseUUID("webhook_endpoint_id", v)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		endpointID = &id
	}
	subs, err := s.Store.ListWebhookSubscriptions(r.Context(), tenantID, endpointID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": subs})
}

func (s *Server) handleDeleteSubscription(w http.ResponseWriter, r *http.Request) {
	tenantID, id, err := tenantAndID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.Store.DeleteWebhookSubscription(r.Context(), tenantID, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleGetDelivery(w http.ResponseWriter, r *http.Request) {
	tenantID, id, err := tenantAndID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := s.Store.GetWebhookDelivery(r.Context(), tenantID, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}
