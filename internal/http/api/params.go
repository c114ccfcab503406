package api

import (
	"context"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
)

// tenantOf resolves the tenant a request acts on from its tenant_id (query
// parameter or body member; zero when absent) and its principal: the
// platform must name one, a key's tenant is implied and naming another is
// FORBIDDEN.
func tenantOf(ctx context.Context, given ID) (uuid.UUID, error) {
	p, err := principal(ctx)
	if err != nil {
		return uuid.Nil, err
	}
	return p.Tenant(given.UUID())
}

// tenantOfID resolves the tenant of a request naming a resource by its
// globally unique id: as tenantOf, except that the platform token may
// leave tenant_id out, and the tenant is then the id's owner (one lookup
// over every id table, store.TenantOfID); an id nobody owns is NOT_FOUND.
// field names the id in the error.
func (s *Server) tenantOfID(ctx context.Context, given ID, field string, id ID) (uuid.UUID, error) {
	p, err := principal(ctx)
	if err != nil {
		return uuid.Nil, err
	}
	if !p.Platform || !given.IsZero() {
		return p.Tenant(given.UUID())
	}
	tenantID, found, err := s.Store.TenantOfID(ctx, id.UUID())
	if err != nil {
		return uuid.Nil, err
	}
	if !found {
		return uuid.Nil, errcode.New(errcode.NotFound, "%s %s not found", field, id)
	}
	return tenantID, nil
}

// parseTenantAndID resolves the tenant of a request on the resource {id}
// (tenantOfID) and returns it with the id.
func (s *Server) parseTenantAndID(ctx context.Context, tenant, id ID) (uuid.UUID, uuid.UUID, error) {
	return s.parseTenantAnd(ctx, "id", tenant, id)
}

// parseTenantAnd is parseTenantAndID for an id named field.
func (s *Server) parseTenantAnd(ctx context.Context, field string, tenant, id ID) (uuid.UUID, uuid.UUID, error) {
	tenantID, err := s.tenantOfID(ctx, tenant, field, id)
	return tenantID, id.UUID(), err
}
