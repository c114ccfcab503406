package api

import (
	"context"
	"strings"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

type createTenantRequest struct {
	Slug string `json:"slug" pattern:"^[a-z0-9][a-z0-9-]{0,62}$" patternDescription:"1-63 lower-case letters, digits and dashes, starting with a letter or digit"`
	Name string `json:"name" minLength:"1" maxLength:"200" doc:"Shown to people; leading and trailing spaces are dropped."`
}

// handleCreateTenant creates a tenant; the platform token only (platformOp).
func (s *Server) handleCreateTenant(ctx context.Context, in *bodyInput[createTenantRequest]) (*out[bpctype.Tenant], error) {
	name := strings.TrimSpace(in.Body.Name)
	if name == "" {
		return nil, errcode.Invalid("name", "is required")
	}
	return created(s.Store.CreateTenant(ctx, in.Body.Slug, name))
}

// handleListTenants lists every tenant to the platform, and a key's own
// tenant to the key.
func (s *Server) handleListTenants(ctx context.Context, _ *struct{}) (*out[items[bpctype.Tenant]], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if p.Platform {
		return okItems(s.reads().ListTenants(ctx))
	}
	t, err := s.Store.GetTenant(ctx, p.TenantID)
	return okItems([]bpctype.Tenant{t}, err)
}

// quotaDefaults are the service's default quotas (Config.Quotas, or SPEC
// §15's when the configuration leaves them zero).
func (s *Server) quotaDefaults() passport.Quotas {
	if s.Config.Quotas == (passport.Quotas{}) {
		return passport.DefaultQuotas()
	}
	return s.Config.Quotas
}

type updateTenantQuotasRequest struct {
	Quotas passport.QuotaOverrides `json:"quotas,omitempty" doc:"Limits to set, by quota name; the others stay as they are."`
	Reset  []string                `json:"reset,omitempty" maxItems:"7" enum:"webhook_endpoints,webhook_subscriptions,api_keys,queued_jobs,event_payload_bytes,rate_limit_rps,rate_limit_burst" doc:"Quotas whose override is dropped: back to the service's default."`
}

type tenantQuotasResponse struct {
	TenantID uuid.UUID       `json:"tenant_id"`
	Quotas   passport.Quotas `json:"quotas" doc:"The tenant's effective limits: the service's defaults with its overrides."`
}

// handleUpdateTenantQuotas sets the platform's overrides of a tenant's
// quotas; the platform token only (platformOp).
func (s *Server) handleUpdateTenantQuotas(ctx context.Context, in *idBody[updateTenantQuotasRequest]) (*out[tenantQuotasResponse], error) {
	tenantID := in.ID.UUID()
	quotas, err := inTxValue(ctx, s, func(t passport.Tx) (passport.Quotas, error) {
		return passport.SetTenantQuotas(ctx, t, s.quotaDefaults(), tenantID, in.Body.Quotas, in.Body.Reset)
	})
	if err != nil {
		return nil, err
	}
	s.queued.Forget(tenantID)
	return ok(tenantQuotasResponse{TenantID: tenantID, Quotas: quotas}, nil)
}

type tenantUsageResponse struct {
	TenantID uuid.UUID         `json:"tenant_id"`
	Quotas   passport.Quotas   `json:"quotas" doc:"The tenant's effective limits: the service's defaults with its overrides."`
	Usage    store.TenantUsage `json:"usage" doc:"What the tenant uses now."`
}

// handleGetTenantUsage answers a tenant's quotas and usage to the platform
// and to the tenant's own keys. To a key another tenant's id is 404, as
// another tenant's ids are on every by-id route, and a tenant_id naming
// another tenant 403.
func (s *Server) handleGetTenantUsage(ctx context.Context, in *idParams) (*out[tenantUsageResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	tenantID := in.ID.UUID()
	if !p.Platform {
		own, err := p.Tenant(in.TenantID.UUID())
		if err != nil {
			return nil, err
		}
		if own != tenantID {
			return nil, errcode.Wrap(errcode.NotFound, store.ErrNotFound, "tenant %s not found", tenantID)
		}
	} else if !in.TenantID.IsZero() && in.TenantID.UUID() != tenantID {
		return nil, errcode.Wrap(errcode.NotFound, store.ErrNotFound, "tenant %s not found", tenantID)
	}
	quotas, err := passport.TenantQuotas(ctx, s.Store, s.quotaDefaults(), tenantID)
	if err != nil {
		return nil, err
	}
	usage, err := s.Store.GetTenantUsage(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	return ok(tenantUsageResponse{TenantID: tenantID, Quotas: quotas, Usage: usage}, nil)
}
