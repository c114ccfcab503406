package api

import (
	"context"
	"net/http"
	"regexp"
	"strings"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/store"
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

type tenantOutput struct {
	Status int
	Body   store.Tenant
}

func (s *Server) handleCreateTenant(ctx context.Context, raw *jsonInput) (*tenantOutput, error) {
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
	t, err := s.Store.CreateTenant(ctx, in.Slug, in.Name)
	if err != nil {
		return nil, err
	}
	return &tenantOutput{Status: http.StatusCreated, Body: t}, nil
}

type tenantsOutput struct {
	Body items[store.Tenant]
}

func (s *Server) handleListTenants(ctx context.Context, _ *struct{}) (*tenantsOutput, error) {
	tenants, err := s.Store.ListTenants(ctx)
	if err != nil {
		return nil, err
	}
	return &tenantsOutput{Body: items[store.Tenant]{Items: tenants}}, nil
}
