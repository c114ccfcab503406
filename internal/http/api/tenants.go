package api

import (
	"context"
	"regexp"
	"strings"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
)

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

type createTenantRequest struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

// jsonInput is the input of an operation that takes a JSON body and no
// parameters; the handler decodes RawBody with decodeBytes.
type jsonInput struct {
	RawBody []byte
}

func (s *Server) handleCreateTenant(ctx context.Context, raw *jsonInput) (*out[bpctype.Tenant], error) {
	if err := requirePlatform(ctx, "creating tenants"); err != nil {
		return nil, err
	}
	var in createTenantRequest
	if err := decodeBytes(raw.RawBody, &in); err != nil {
		return nil, err
	}
	in.Name = strings.TrimSpace(in.Name)
	switch {
	case !slugPattern.MatchString(in.Slug):
		return nil, errcode.Invalid("slug", "must be 1-63 lower-case letters, digits and dashes, starting with a letter or digit")
	case in.Name == "" || len(in.Name) > 200:
		return nil, errcode.Invalid("name", "is required, at most 200 characters")
	}
	return created(s.Store.CreateTenant(ctx, in.Slug, in.Name))
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
