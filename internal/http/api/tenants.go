package api

import (
	"context"
	"strings"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
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
		return okItems(s.Store.ListTenants(ctx))
	}
	t, err := s.Store.GetTenant(ctx, p.TenantID)
	return okItems([]bpctype.Tenant{t}, err)
}
