package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"
)

// The read and delete endpoints share these shapes; they serve them from
// store methods (method values such as s.Store.GetSnapshot). A resource
// named by its id needs no tenant_id with the platform token: the id's
// owner is the tenant (Server.tenantOfID).

// listFunc lists a tenant's resources.
type listFunc[T any] func(ctx context.Context, tenantID uuid.UUID) ([]T, error)

// getFunc reads one resource (or the children of one) of a tenant.
type getFunc[T any] func(ctx context.Context, tenantID, id uuid.UUID) (T, error)

// listTenant answers GET …?tenant_id= with {items}; an unknown tenant is 404.
func listTenant[T any](ctx context.Context, s *Server, in *tenantParam, list listFunc[T]) (*out[items[T]], error) {
	tenantID, err := tenantOf(ctx, in.TenantID)
	if err != nil {
		return nil, err
	}
	if err := s.requireTenantExists(ctx, tenantID); err != nil {
		return nil, err
	}
	return okItems(list(ctx, tenantID))
}

// getByID answers GET …/{id}?tenant_id= with the resource.
func getByID[T any](ctx context.Context, s *Server, in *idParams, get getFunc[T]) (*out[T], error) {
	tenantID, id, err := s.parseTenantAndID(ctx, in.TenantID, in.ID)
	if err != nil {
		return nil, err
	}
	return ok(get(ctx, tenantID, id))
}

// listChildren answers GET …/{id}/<children>?tenant_id= with {items}; an
// unknown parent is 404 (not an empty list).
func listChildren[P, T any](ctx context.Context, s *Server, in *idParams, parent getFunc[P], children getFunc[[]T]) (*out[items[T]], error) {
	return getJoined(ctx, s, in, parent, children, func(_ P, all []T) items[T] { return items[T]{Items: all} })
}

// getJoined answers GET …/{id}?tenant_id= with the resource and what a
// second read finds for it (its children, its state), combined by join.
func getJoined[P, C, R any](ctx context.Context, s *Server, in *idParams, parent getFunc[P], more getFunc[C], join func(P, C) R) (*out[R], error) {
	p, c, err := getBoth(ctx, s, in, parent, more)
	if err != nil {
		return nil, err
	}
	return reply(http.StatusOK, join(p, c))
}

// getBoth reads the resource of GET …/{id}?tenant_id= and then what a
// second read finds for it.
func getBoth[P, C any](ctx context.Context, s *Server, in *idParams, parent getFunc[P], more getFunc[C]) (p P, c C, err error) {
	tenantID, id, err := s.parseTenantAndID(ctx, in.TenantID, in.ID)
	if err != nil {
		return p, c, err
	}
	if p, err = parent(ctx, tenantID, id); err != nil {
		return p, c, err
	}
	c, err = more(ctx, tenantID, id)
	return p, c, err
}

// deleteByID answers DELETE …/{id}?tenant_id= with 204 once del removed it.
func (s *Server) deleteByID(ctx context.Context, in *idParams, del func(ctx context.Context, tenantID, id uuid.UUID) error) (*struct{}, error) {
	tenantID, id, err := s.parseTenantAndID(ctx, in.TenantID, in.ID)
	if err != nil {
		return nil, err
	}
	if err := del(ctx, tenantID, id); err != nil {
		return nil, err
	}
	return &struct{}{}, nil
}
