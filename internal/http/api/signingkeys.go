package api

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
)

// signingKeyRoutes are GET /v1/signing-keys, its rotation and revocation
// (SPEC §16).
func (s *Server) signingKeyRoutes(rs routes) {
	register(rs, http.MethodGet, "/v1/signing-keys", "list-signing-keys", "List a tenant's signing keys and the platform's legacy keys", s.handleListSigningKeys,
		describe("A tenant API key (any role) or the platform token with tenant_id: the tenant's keys, oldest first, then the platform's legacy keys "+
			"(tenant_id null), which signed every tenant's receipts before tenants had keys. The platform token without tenant_id: the legacy keys only. "+
			"Public keys, statuses and times only; private keys never leave the service."),
		responds[items[bpctype.SigningKey]](http.StatusOK, "Keys"))
	register(rs, http.MethodPost, "/v1/signing-keys:rotate", "rotate-signing-key", "Retire the tenant's active signing key and make a new one", s.handleRotateSigningKey,
		jsonBody[rotateSigningKeyRequest],
		responds[bpctype.SigningKey](http.StatusCreated, "The new active key"))
	register(rs, http.MethodPost, "/v1/signing-keys/{key_id}/revoke", "revoke-signing-key", "Revoke a signing key of the tenant", s.handleRevokeSigningKey,
		jsonBody[revokeSigningKeyRequest],
		responds[bpctype.SigningKey](http.StatusOK, "The revoked key"))
}

type signingKeyListInput struct {
	TenantID ID `query:"tenant_id" doc:"The tenant whose keys to list: a tenant API key's own tenant when absent (another tenant's is 403); with the platform token, absent lists the legacy keys only."`
}

// handleListSigningKeys lists the caller's tenant's keys and the legacy
// keys.
func (s *Server) handleListSigningKeys(ctx context.Context, in *signingKeyListInput) (*out[items[bpctype.SigningKey]], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if p.Platform && in.TenantID.IsZero() {
		return okItems(s.reads().ListPlatformSigningKeys(ctx))
	}
	tenantID, err := p.Tenant(in.TenantID.UUID())
	if err != nil {
		return nil, err
	}
	if err := s.requireTenantExists(ctx, tenantID); err != nil {
		return nil, err
	}
	return okItems(s.reads().ListTenantSigningKeys(ctx, tenantID))
}

// signingKeyTenant resolves the tenant whose signing keys a request
// manages: the platform names any, a tenant admin key only its own.
func (s *Server) signingKeyTenant(ctx context.Context, given ID) (uuid.UUID, error) {
	tenantID, err := tenantOf(ctx, given)
	if err != nil {
		return uuid.Nil, err
	}
	p, _ := principal(ctx)
	if err := p.ManageKeys(tenantID); err != nil {
		return uuid.Nil, errcode.New(errcode.Forbidden, "managing signing keys takes the platform token or an admin key of the tenant")
	}
	return tenantID, nil
}

type rotateSigningKeyRequest struct {
	TenantID ID `json:"tenant_id,omitempty" doc:"Required with the platform token; a tenant admin key's own tenant when absent (another tenant's is 403)."`
}

func (s *Server) handleRotateSigningKey(ctx context.Context, in *bodyInput[rotateSigningKeyRequest]) (*out[bpctype.SigningKey], error) {
	tenantID, err := s.signingKeyTenant(ctx, in.Body.TenantID)
	if err != nil {
		return nil, err
	}
	if s.SigningKeys == nil {
		return nil, errcode.New(errcode.SigningKeyMissing, "this process has no key encryption key (BPC_KEY_ENCRYPTION_KEY)")
	}
	key, err := inTxValue(ctx, s, func(t passport.Tx) (bpctype.SigningKey, error) {
		return s.SigningKeys.RotateSigningKey(ctx, t, tenantID)
	})
	s.publicChanged(tenantID, err) // the old key shows as retired
	return created(key, err)
}

type revokeSigningKeyRequest struct {
	TenantID      ID         `json:"tenant_id,omitempty" doc:"Optional: a tenant admin key's own tenant when absent (another tenant's is 403); with the platform token, the key's owner when absent."`
	CompromisedAt *time.Time `json:"compromised_at,omitempty" doc:"Since when the key is compromised: what it signed at or after this time no longer verifies. Now when absent; never in the future."`
	Reason        string     `json:"reason" minLength:"1" maxLength:"500" doc:"Why the key is revoked (kept with the key and in the audit event, and shown on the public pages of what it signed): printable text, no control or format characters, no leading or trailing spaces."`
}

type revokeSigningKeyInput struct {
	KeyID string `path:"key_id" minLength:"1" maxLength:"100" doc:"The key's id, as the receipts name it."`
	Body  revokeSigningKeyRequest
}

func (s *Server) handleRevokeSigningKey(ctx context.Context, in *revokeSigningKeyInput) (*out[bpctype.SigningKey], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	given := in.Body.TenantID
	if p.Platform && given.IsZero() {
		// The platform may name a key alone: its owner is the tenant. A
		// legacy key (no owner) and an unknown id are NOT_FOUND.
		row, err := s.Store.GetSigningKey(ctx, in.KeyID)
		if err != nil {
			return nil, err
		}
		if row.TenantID == nil {
			return nil, errcode.New(errcode.NotFound, "signing key %s not found", in.KeyID)
		}
		given = ID(*row.TenantID)
	}
	tenantID, err := s.signingKeyTenant(ctx, given)
	if err != nil {
		return nil, err
	}
	key, err := inTxValue(ctx, s, func(t passport.Tx) (bpctype.SigningKey, error) {
		// The database's clock, which signed_at is written with.
		now, err := t.Q.Now(ctx)
		if err != nil {
			return bpctype.SigningKey{}, err
		}
		return passport.RevokeSigningKey(ctx, t, tenantID, in.KeyID,
			passport.Revocation{CompromisedAt: in.Body.CompromisedAt, Reason: in.Body.Reason}, now)
	})
	s.publicChanged(tenantID, err)
	return ok(key, err)
}
