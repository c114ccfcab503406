package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/webhook/breaker"
	"github.com/bpc-platform/bpc/internal/webhook/destination"
	"github.com/bpc-platform/bpc/passport"
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
	TenantID ID     `json:"tenant_id,omitempty" doc:"Required with the platform token; a tenant API key's own tenant when absent."`
	URL      string `json:"url" minLength:"1" maxLength:"2048" doc:"Absolute http(s) URL of a public host (https only in production)."`
	Secret   string `json:"secret" minLength:"16" maxLength:"512" doc:"The HMAC-SHA256 signing secret of the deliveries."`
}

func (s *Server) handleCreateEndpoint(ctx context.Context, raw *bodyInput[createEndpointRequest]) (*out[bpctype.WebhookEndpoint], error) {
	in := raw.Body
	tenantID, err := tenantOf(ctx, in.TenantID)
	if err != nil {
		return nil, err
	}
	if err := passport.CheckWebhookSecret("secret", in.Secret); err != nil {
		return nil, err
	}
	if err := s.validateEndpointURL(ctx, in.URL); err != nil {
		return nil, err
	}
	return created(inTxValue(ctx, s, func(t passport.Tx) (bpctype.WebhookEndpoint, error) {
		return passport.CreateWebhookEndpoint(ctx, t, s.quotaDefaults(), tenantID, in.URL, in.Secret)
	}))
}

func (s *Server) handleListEndpoints(ctx context.Context, in *tenantParam) (*out[items[bpctype.WebhookEndpoint]], error) {
	tenantID, err := tenantOf(ctx, in.TenantID)
	if err != nil {
		return nil, err
	}
	return okItems(s.reads().ListWebhookEndpoints(ctx, tenantID))
}

func (s *Server) handleGetEndpoint(ctx context.Context, in *idParams) (*out[endpointResponse], error) {
	return getJoined(ctx, s, in, s.Store.GetWebhookEndpoint, s.Store.GetWebhookBreaker, func(ep bpctype.WebhookEndpoint, b bpctype.WebhookBreaker) endpointResponse {
		return endpointResponse{WebhookEndpoint: ep, Breaker: breaker.ViewOf(b, time.Now())}
	})
}

// endpointResponse is an endpoint with its circuit breaker (CLOSED with
// zeros when it has none yet).
type endpointResponse struct {
	bpctype.WebhookEndpoint
	Breaker breaker.View `json:"breaker"`
}

type updateEndpointRequest struct {
	URL      string `json:"url" required:"false" maxLength:"2048" doc:"New URL; unchanged when empty."`
	IsActive *bool  `json:"is_active" required:"false" doc:"Pause (false) or resume (true) deliveries; unchanged when absent."`
}

func (s *Server) handleUpdateEndpoint(ctx context.Context, raw *idParamsBody[updateEndpointRequest]) (*out[bpctype.WebhookEndpoint], error) {
	tenantID, id, err := s.parseTenantAndID(ctx, raw.TenantID, raw.ID)
	if err != nil {
		return nil, err
	}
	in := raw.Body
	if in.URL != "" {
		if err := s.validateEndpointURL(ctx, in.URL); err != nil {
			return nil, err
		}
	}
	return ok(inTxValue(ctx, s, func(t passport.Tx) (bpctype.WebhookEndpoint, error) {
		return passport.UpdateWebhookEndpoint(ctx, t, s.quotaDefaults(), tenantID, id, in.URL, in.IsActive)
	}))
}

func (s *Server) handleDeleteEndpoint(ctx context.Context, in *idParams) (*struct{}, error) {
	return s.deleteByID(ctx, in, func(ctx context.Context, tenantID, id uuid.UUID) error {
		return s.Store.InTx(ctx, func(tx pgx.Tx) error {
			return s.Store.WithTx(tx).DeleteWebhookEndpoint(ctx, tenantID, id)
		})
	})
}

// webhookDelivery is a bpctype.WebhookDelivery, marshalled by its MarshalJSON
// (promoted); ResponseBody only documents the member that method adds.
type webhookDelivery struct {
	bpctype.WebhookDelivery
	ResponseBody *string `json:"response_body" doc:"The endpoint's answer, as text (stored bounded)."`
}

type pingResponse struct {
	EventID           uuid.UUID `json:"event_id"`
	WebhookDeliveryID uuid.UUID `json:"webhook_delivery_id"`
	JobID             uuid.UUID `json:"job_id"`
}

// handlePingEndpoint sends a webhook.ping event to one endpoint, whatever
// its subscriptions.
func (s *Server) handlePingEndpoint(ctx context.Context, in *idParams) (*out[pingResponse], error) {
	tenantID, id, err := s.parseTenantAndID(ctx, in.TenantID, in.ID)
	if err != nil {
		return nil, err
	}
	admitted, err := s.queued.Admit(ctx, s.Store, s.quotaDefaults(), []uuid.UUID{tenantID})
	if err != nil {
		return nil, err
	}
	res, err := inTxValue(ctx, s, func(t passport.Tx) (passport.AppendResult, error) {
		ep, err := t.Q.GetWebhookEndpoint(ctx, tenantID, id)
		if err != nil {
			return passport.AppendResult{}, err
		}
		if ep.DeletedAt != nil {
			return passport.AppendResult{}, errcode.New(errcode.NotFound, "webhook endpoint %s not found", id)
		}
		return t.AppendEvent(ctx, passport.EventInput{
			TenantID: tenantID, AggregateType: pingAggregateType, AggregateID: id,
			EventType: pingEventType, ActorID: t.Actor,
			Payload: []byte(`{"ping":true}`), DeliverTo: &id,
		})
	})
	if err != nil {
		admitted.Done(nil)
		return nil, err
	}
	admitted.DoneInserted(tenantID, len(res.Deliveries))
	if len(res.Deliveries) != 1 {
		return nil, errcode.New(errcode.InvalidState, "webhook endpoint %s is inactive", id)
	}
	return reply(http.StatusAccepted, pingResponse{
		EventID: res.Event.EventID, WebhookDeliveryID: res.Deliveries[0].WebhookDeliveryID, JobID: res.Deliveries[0].JobID,
	})
}

type createSubscriptionRequest struct {
	TenantID          ID     `json:"tenant_id,omitempty" doc:"Required with the platform token; a tenant API key's own tenant when absent."`
	WebhookEndpointID ID     `json:"webhook_endpoint_id"`
	EventType         string `json:"event_type" minLength:"1" maxLength:"128" doc:"An event type, or * for every event."`
}

func (s *Server) handleCreateSubscription(ctx context.Context, raw *bodyInput[createSubscriptionRequest]) (*out[bpctype.WebhookSubscription], error) {
	in := raw.Body
	tenantID, err := tenantOf(ctx, in.TenantID)
	if err != nil {
		return nil, err
	}
	if err := passport.CheckEventTypeFilter("event_type", in.EventType); err != nil {
		return nil, err
	}
	return created(inTxValue(ctx, s, func(t passport.Tx) (bpctype.WebhookSubscription, error) {
		return passport.CreateWebhookSubscription(ctx, t, s.quotaDefaults(), tenantID, in.WebhookEndpointID.UUID(), in.EventType)
	}))
}

func (s *Server) handleListSubscriptions(ctx context.Context, in *listSubscriptionsParams) (*out[items[bpctype.WebhookSubscription]], error) {
	tenantID, err := tenantOf(ctx, in.TenantID)
	if err != nil {
		return nil, err
	}
	var endpointID *uuid.UUID
	if !in.WebhookEndpointID.IsZero() {
		id := in.WebhookEndpointID.UUID()
		endpointID = &id
	}
	return okItems(s.reads().ListWebhookSubscriptions(ctx, tenantID, endpointID))
}

func (s *Server) handleDeleteSubscription(ctx context.Context, in *idParams) (*struct{}, error) {
	return s.deleteByID(ctx, in, s.Store.DeleteWebhookSubscription)
}

func (s *Server) handleGetDelivery(ctx context.Context, in *idParams) (*out[webhookDelivery], error) {
	return getByID(ctx, s, in, func(ctx context.Context, tenantID, id uuid.UUID) (webhookDelivery, error) {
		d, err := s.Store.GetWebhookDelivery(ctx, tenantID, id)
		return webhookDelivery{WebhookDelivery: d}, err
	})
}
