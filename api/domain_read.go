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

// serveTenantList answers GET …?tenant_id= with {items}; an unknown tenant is 404.
func serveTenantList[T any](s *Server, w http.ResponseWriter, r *http.Request, list listFunc[T]) {
	tenantID, err := queryTenant(r)
	if err == nil {
		err = s.requireTenantExists(r.Context(), tenantID)
	}
	var items []T
	if err == nil {
		items, err = list(r.Context(), tenantID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

// serveByID answers GET …/{id}?tenant_id= with the resource.
func serveByID[T any](s *Server, w http.ResponseWriter, r *http.Request, get getFunc[T]) {
	tenantID, id, err := tenantAndID(r)
	var v T
	if err == nil {
		v, err = get(r.Context(), tenantID, id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// serveChildren answers GET …/{id}/<children>?tenant_id= with {items}; an
// unknown parent is 404 (not an empty list).
func serveChildren[P, T any](s *Server, w http.ResponseWriter, r *http.Request, parent getFunc[P], children getFunc[[]T]) {
	serveParent(s, w, r, parent, children, func(_ P, items []T) any { return map[string]any{"items": items} })
}

// serveParent answers GET …/{id}?tenant_id= with the resource and its
// children, combined by join.
func serveParent[P, T any](s *Server, w http.ResponseWriter, r *http.Request, parent getFunc[P], children getFunc[[]T], join func(P, []T) any) {
	tenantID, id, err := tenantAndID(r)
	var p P
	if err == nil {
		p, err = parent(r.Context(), tenantID, id)
	}
	var items []T
	if err == nil {
		items, err = children(r.Context(), tenantID, id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, join(p, items))
}
