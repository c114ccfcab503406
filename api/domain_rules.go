package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

type createRulePackageRequest struct {
	TenantID string `json:"tenant_id" format:"uuid"`
	Name     string `json:"name"`
}

func (s *Server) handleCreateRulePackage(w http.ResponseWriter, r *http.Request) {
	var in createRulePackageRequest
	tenantID, err := decodeTenantBody(r, &in, &in.TenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	name, err := requireName("name", in.Name, maxNameChars)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.Store.CreateRulePackage(r.Context(), tenantID, name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, p)
}

func (s *Server) handleListRulePackages(w http.ResponseWriter, r *http.Request) {
	serveTenantList(s, w, r, s.Store.ListRulePackages)
}

type rulePackageWithVersions struct {
	store.RulePackage
	Versions []store.RulePackageVersion `json:"versions"`
}

func (s *Server) handleGetRulePackage(w http.ResponseWriter, r *http.Request) {
	serveParent(s, w, r, s.Store.GetRulePackage, s.Store.ListRulePackageVersions, func(p store.RulePackage, vs []store.RulePackageVersion) any {
		return rulePackageWithVersions{RulePackage: p, Versions: vs}
	})
}

type createRuleVersionRequest struct {
	TenantID    string `json:"tenant_id" format:"uuid"`
	DSLSource   string `json:"dsl_source"`
	TestsSource string `json:"tests_source"`
}

// handleCreateRuleVersion checks both sources (BPC-RULES-1 and its tests
// language) within the service's rule limits and stores them as the
// package's next DRAFT version. A source beyond the limits is refused here,
// 422 with its line:col (RULE_PARSE_ERROR for nesting or node count,
// VALIDATION_ERROR for the cases a run would have), so that no job ever
// works on it.
func (s *Server) handleCreateRuleVersion(w http.ResponseWriter, r *http.Request) {
	var in createRuleVersionRequest
	tenantID, err := decodeTenantBody(r, &in, &in.TenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	packageID, err := pathUUID(r, "id")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	src, err := passport.CheckRuleSources(s.Config.CompileLimits.Rules, passport.RuleSources{DSL: in.DSLSource, Tests: in.TestsSource})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	var v store.RulePackageVersion
	err = s.inTx(ctx, func(t passport.Tx) error {
		v, err = passport.CreateRuleVersion(ctx, t, tenantID, packageID, src)
		return err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, v)
}

func (s *Server) handleGetRuleVersion(w http.ResponseWriter, r *http.Request) {
	tenantID, id, err := tenantAndID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	withSources := false
	switch include := strings.TrimSpace(r.URL.Query().Get("include")); include {
	case "":
	case "sources":
		withSources = true
	default:
		s.writeError(w, r, errcode.Invalid("include", "must be \"sources\" or absent"))
		return
	}
	v, err := s.Store.GetRulePackageVersion(r.Context(), tenantID, id, withSources)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

type runRuleTestsRequest struct {
	TenantID string `json:"tenant_id" format:"uuid"`
	Seed     *int64 `json:"seed" required:"false" doc:"Seed of the property tests; random when absent."`
}

// handleRunRuleTests enqueues RUN_RULE_TESTS for an existing version.
func (s *Server) handleRunRuleTests(w http.ResponseWriter, r *http.Request) {
	var in runRuleTestsRequest
	tenantID, err := decodeTenantBody(r, &in, &in.TenantID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id, err := pathUUID(r, "id")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	args := jobargs.RunRuleTestsArgs{Base: jobargs.Base{TenantID: tenantID}, RulePackageVersionID: id}
	if in.Seed != nil {
		args.Seed = *in.Seed
	}
	job, err := s.enqueueDomainJob(r, args, func(ctx context.Context, q *store.Queries) error {
		_, err := q.GetRulePackageVersion(ctx, tenantID, id, false)
		return err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, jobResponse{Job: job})
}

func (s *Server) handleListRuleTestsRuns(w http.ResponseWriter, r *http.Request) {
	version := func(ctx context.Context, tenantID, id uuid.UUID) (store.RulePackageVersion, error) {
		return s.Store.GetRulePackageVersion(ctx, tenantID, id, false)
	}
	serveChildren(s, w, r, version, s.Store.ListRuleTestsRuns)
}

// handlePublishRuleVersion publishes a VALIDATED version; publishing a
// PUBLISHED version again changes nothing and records no event.
func (s *Server) handlePublishRuleVersion(w http.ResponseWriter, r *http.Request) {
	tenantID, id, err := bodyTenantAndID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	var v store.RulePackageVersion
	err = s.inTx(ctx, func(t passport.Tx) error {
		v, err = passport.PublishRuleVersion(ctx, t, tenantID, id)
		return err
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
