package api

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// tenantIDPath is a tenant's {id} in the path, and the tenant_id every
// tenant route takes (SPEC §17).
type tenantIDPath struct {
	ID       ID `path:"id" doc:"The tenant's id."`
	TenantID ID `query:"tenant_id" doc:"Optional: the tenant of the resource, the path's id. A tenant API key naming another tenant is 403."`
}

// issuerTenant returns the tenant whose issuer profile a request acts on:
// any existing tenant but the system tenant for the platform token, the
// key's own tenant for an admin key of it. Another tenant's id is 404 to a
// key, as another tenant's ids are everywhere, and a tenant_id naming
// another tenant 403; a writer or reader key of the tenant is 403.
func (s *Server) issuerTenant(ctx context.Context, id, given uuid.UUID) (uuid.UUID, error) {
	p, err := principal(ctx)
	if err != nil {
		return uuid.Nil, err
	}
	if !p.Platform {
		if _, err := p.Tenant(given); err != nil {
			return uuid.Nil, err
		}
	}
	notFound := errcode.Wrap(errcode.NotFound, store.ErrNotFound, "tenant %s not found", id)
	switch {
	case id == store.SystemTenantID, given != uuid.Nil && given != id:
		return uuid.Nil, notFound
	case p.Platform:
		return id, s.requireTenantExists(ctx, id)
	case p.TenantID != id:
		return uuid.Nil, notFound
	case p.Role != passport.RoleAdmin:
		return uuid.Nil, errcode.New(errcode.Forbidden, "a tenant's issuer profile takes the platform token or an admin key of the tenant")
	}
	return id, nil
}

// handlePutIssuer creates or changes a tenant's issuer profile.
func (s *Server) handlePutIssuer(ctx context.Context, in *idParamsBody[passport.IssuerInput]) (*out[bpctype.IssuerProfile], error) {
	tenantID, err := s.issuerTenant(ctx, in.ID.UUID(), in.TenantID.UUID())
	if err != nil {
		return nil, err
	}
	profile, err := inTxValue(ctx, s, func(t passport.Tx) (bpctype.IssuerProfile, error) {
		return passport.SetIssuerProfile(ctx, t, tenantID, in.Body)
	})
	s.publicChanged(tenantID, err)
	return ok(profile, err)
}

// handleGetIssuer answers a tenant's issuer profile; none is 404.
func (s *Server) handleGetIssuer(ctx context.Context, in *tenantIDPath) (*out[bpctype.IssuerProfile], error) {
	tenantID, err := s.issuerTenant(ctx, in.ID.UUID(), in.TenantID.UUID())
	if err != nil {
		return nil, err
	}
	return ok(s.Store.GetIssuerProfile(ctx, tenantID))
}

// handleVerifyIssuer records that the platform verified the issuer's
// identity: the values the operator checked, which must be the stored
// profile's (409 CONFLICT when the profile changed since it was read). The
// platform token only: platformOp refuses any other before the body is
// read, and the handler checks again, so that the route stays closed if
// its registration loses the option.
func (s *Server) handleVerifyIssuer(ctx context.Context, in *idParamsBody[passport.IssuerInput]) (*out[bpctype.IssuerProfile], error) {
	if err := requirePlatform(ctx, verifyIssuerWhat); err != nil {
		return nil, err
	}
	tenantID, err := s.issuerTenant(ctx, in.ID.UUID(), in.TenantID.UUID())
	if err != nil {
		return nil, err
	}
	profile, err := inTxValue(ctx, s, func(t passport.Tx) (bpctype.IssuerProfile, error) {
		return passport.VerifyIssuer(ctx, t, tenantID, in.Body, time.Now())
	})
	s.publicChanged(tenantID, err)
	return ok(profile, err)
}

// verifyIssuerWhat names the verify route in its 403.
const verifyIssuerWhat = "verifying an issuer's identity"
