package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"
)

// The read endpoints of the domain share four shapes; these serve them from
// a store method (a method value such as s.Store.GetSnapshot).

// listFunc lists a tenant's resources.
type listFunc[T any] func(ctx context.Context, tenantID uuid.UUID) ([]T, error)

// getFunc reads one resource (or the children of one) of a tenant.
type getFunc[T any] func(ctx context.Context, tenantID, id uuid.UUID) (T, error)

// listTenant answers GET …?tenant_id= with {items}; an unknown tenant is 404.
func listTenant[T any](ctx context.Context, s *Server, in *tenantParam, list listFunc[T]) (*out[items[T]], error) {
	tenantID, err := parseUUID("tenant_id", in.TenantID)
	if err != nil {
		return nil, err
	}
	if err := s.requireTenantExists(ctx, tenantID); err != nil {
		return nil, err
	}
	all, err := list(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	return reply(http.StatusOK, items[T]{Items: all})
}

// getByID answers GET …/{id}?tenant_id= with the resource.
func getByID[T any](ctx context.Context, in *idParams, get getFunc[T]) (*out[T], error) {
	tenantID, id, err := parseTenantAndID(in.TenantID, in.ID)
	if err != nil {
		return nil, err
	}
	v, err := get(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	return reply(http.StatusOK, v)
}

// listChildren answers GET …/{id}/<children>?tenant_id= with {items}; an
// unknown parent is 404 (not an empty list).
func listChildren[P, T any](ctx context.Context, in *idParams, parent getFunc[P], children getFunc[[]T]) (*out[items[T]], error) {
	return withChildren(ctx, in, parent, children, func(_ P, all []T) items[T] { return items[T]{Items: all} })
}

// withChildren answers GET …/{id}?tenant_id= with the resource and its
// children, combined by join.
func withChildren[P, T, R any](ctx context.Context, in *idParams, parent getFunc[P], children getFunc[[]T], join func(P, []T) R) (*out[R], error) {
	tenantID, id, err := parseTenantAndID(in.TenantID, in.ID)
	if err != nil {
		return nil, err
	}
	p, err := parent(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	all, err := children(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	return reply(http.StatusOK, join(p, all))
}
