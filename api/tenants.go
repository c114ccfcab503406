package api

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/bpc-platform/bpc/core/errcode"
)

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

type createTenantRequest struct {
	Slug string `json:"slug"`
	Name string `json:"name"`
}

func (s *Server) handleCreateTenant(w http.ResponseWriter, r *http.Request) {
	var in createTenantRequest
	if err := decodeJSON(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	in.Name = strings.TrimSpace(in.Name)
	switch {
	case !slugPattern.MatchString(in.Slug):
		s.writeError(w, r, errcode.Invalid("slug", "must be 1-63 lower-case letters, digits and dashes, starting with a letter or digit"))
		return
	case in.Name == "" || len(in.Name) > 200:
		s.writeError(w, r, errcode.Invalid("name", "is required, at most 200 characters"))
		return
	}
	t, err := s.Store.CreateTenant(r.Context(), in.Slug, in.Name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, t)
}

func (s *Server) handleListTenants(w http.ResponseWriter, r *http.Request) {
	tenants, err := s.Store.ListTenants(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": tenants})
}
