package public

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/store"
)

// IssuerPath is the route of a tenant's public key directory.
const IssuerPath = "/public/v1/issuers/{tenant_id}"

// Directory returns the public key directory of a tenant (SPEC §16): its
// issuer profile and the public halves of its own signing keys. The system
// tenant, an unknown tenant, and a tenant with neither a profile nor a key
// are NOT_FOUND. The platform's legacy key is in no tenant's directory.
func Directory(ctx context.Context, q *store.Queries, tenantID uuid.UUID) (verify.Directory, error) {
	d, err := q.GetIssuerDirectory(ctx, tenantID)
	if err != nil {
		return verify.Directory{}, err
	}
	out := verify.Directory{TenantID: tenantID.String(), Keys: make([]verify.DirectoryKey, 0, len(d.Keys))}
	if p := d.Profile; p != nil {
		out.LegalName, out.Country, out.RegistrationID, out.Website = &p.LegalName, &p.Country, &p.RegistrationID, p.Website
		out.IdentityVerified, out.IdentityVerifiedAt = p.IdentityVerifiedAt != nil, p.IdentityVerifiedAt
	}
	for _, k := range d.Keys {
		out.Keys = append(out.Keys, verify.DirectoryKey{
			KeyID: k.KeyID, Alg: k.Alg, PublicKeyBase64: k.PublicKeyBase64, Status: k.Status,
			CreatedAt: k.CreatedAt, RetiredAt: k.RetiredAt, RevokedAt: k.RevokedAt, CompromisedAt: k.CompromisedAt,
		})
	}
	return out, nil
}

// Issuer serves GET /public/v1/issuers/{tenant_id}: JSON only, cached and
// revalidated as the other public answers.
func (h *Handler) Issuer(w http.ResponseWriter, r *http.Request) {
	raw := chi.URLParam(r, "tenant_id")
	id, err := uuid.Parse(raw)
	if err != nil {
		h.failJSON(w, r, errcode.New(errcode.NotFound, "no issuer %q", raw))
		return
	}
	d, err := Directory(r.Context(), h.Store, id)
	if err != nil {
		h.failJSON(w, r, err)
		return
	}
	h.answer(w, r, d, nil)
}
