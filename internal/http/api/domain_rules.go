package api

import (
	"context"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

type createRulePackageRequest struct {
	TenantID ID     `json:"tenant_id,omitempty" doc:"Required with the platform token; a tenant API key's own tenant when absent."`
	Name     string `json:"name" minLength:"1" maxLength:"200"`
}

func (s *Server) handleCreateRulePackage(ctx context.Context, req *bodyInput[createRulePackageRequest]) (*out[bpctype.RulePackage], error) {
	in := req.Body
	tenantID, err := tenantOf(ctx, in.TenantID)
	if err != nil {
		return nil, err
	}
	name, err := passport.CheckName("name", in.Name, passport.MaxNameChars)
	if err != nil {
		return nil, err
	}
	return created(s.Store.CreateRulePackage(ctx, tenantID, name))
}

func (s *Server) handleListRulePackages(ctx context.Context, req *tenantParam) (*out[items[bpctype.RulePackage]], error) {
	return listTenant(ctx, s, req, s.reads().ListRulePackages)
}

type rulePackageWithVersions struct {
	bpctype.RulePackage
	Versions []bpctype.RulePackageVersion `json:"versions"`
}

func (s *Server) handleGetRulePackage(ctx context.Context, req *idParams) (*out[rulePackageWithVersions], error) {
	return getJoined(ctx, s, req, s.Store.GetRulePackage, s.Store.ListRulePackageVersions, func(p bpctype.RulePackage, vs []bpctype.RulePackageVersion) rulePackageWithVersions {
		return rulePackageWithVersions{RulePackage: p, Versions: vs}
	})
}

type createRuleVersionRequest struct {
	TenantID    ID     `json:"tenant_id,omitempty" doc:"Optional: a tenant API key's own tenant when absent (another tenant's is 403), the resource's own for the platform token."`
	DSLSource   string `json:"dsl_source" doc:"The rules, in BPC-RULES-1."`
	TestsSource string `json:"tests_source" doc:"The rules' tests."`
}

// handleCreateRuleVersion checks both sources (BPC-RULES-1 and its tests
// language) within the service's rule limits and stores them as the
// package's next DRAFT version. A source beyond the limits is refused here,
// 422 with its line:col (RULE_PARSE_ERROR for nesting or node count,
// VALIDATION_ERROR for the cases a run would have), so that no job ever
// works on it.
func (s *Server) handleCreateRuleVersion(ctx context.Context, req *idBody[createRuleVersionRequest]) (*out[bpctype.RulePackageVersion], error) {
	in := req.Body
	tenantID, packageID, err := s.parseTenantAndID(ctx, in.TenantID, req.ID)
	if err != nil {
		return nil, err
	}
	src, err := passport.CheckRuleSources(s.Config.CompileLimits.Rules, passport.RuleSources{DSL: in.DSLSource, Tests: in.TestsSource})
	if err != nil {
		return nil, err
	}
	return created(inTxValue(ctx, s, func(t passport.Tx) (bpctype.RulePackageVersion, error) {
		return passport.CreateRuleVersion(ctx, t, tenantID, packageID, src)
	}))
}

func (s *Server) handleGetRuleVersion(ctx context.Context, req *ruleVersionParams) (*out[bpctype.RulePackageVersion], error) {
	tenantID, id, err := s.parseTenantAndID(ctx, req.TenantID, req.ID)
	if err != nil {
		return nil, err
	}
	return ok(s.Store.GetRulePackageVersion(ctx, tenantID, id, req.Include == "sources"))
}

type runRuleTestsRequest struct {
	TenantID ID     `json:"tenant_id,omitempty" doc:"Optional: a tenant API key's own tenant when absent (another tenant's is 403), the resource's own for the platform token."`
	Seed     *int64 `json:"seed,omitempty" doc:"Seed of the property tests; random when absent."`
}

// handleRunRuleTests enqueues RUN_RULE_TESTS for an existing version.
func (s *Server) handleRunRuleTests(ctx context.Context, req *idKeyBody[runRuleTestsRequest]) (*out[jobResponse], error) {
	in := req.Body
	tenantID, id, err := s.parseTenantAndID(ctx, in.TenantID, req.ID)
	if err != nil {
		return nil, err
	}
	args := jobargs.RunRuleTestsArgs{Base: jobargs.Base{TenantID: tenantID}, RulePackageVersionID: id}
	if in.Seed != nil {
		args.Seed = *in.Seed
	}
	return s.startJob(ctx, req.IdempotencyKey, args, id)
}

func (s *Server) handleListRuleTestsRuns(ctx context.Context, req *idParams) (*out[items[bpctype.RuleTestsRun]], error) {
	version := func(ctx context.Context, tenantID, id uuid.UUID) (bpctype.RulePackageVersion, error) {
		return ruleVersion(s.Store, ctx, tenantID, id)
	}
	return listChildren(ctx, s, req, version, s.Store.ListRuleTestsRuns)
}

// ruleVersion reads a rule package version without its sources. It takes
// the store first, as the method expression (*store.Queries).GetSnapshot
// does, to be a getter of exists.
func ruleVersion(q *store.Queries, ctx context.Context, tenantID, id uuid.UUID) (bpctype.RulePackageVersion, error) {
	return q.GetRulePackageVersion(ctx, tenantID, id, false)
}

// handlePublishRuleVersion publishes a VALIDATED version; publishing a
// PUBLISHED version again changes nothing and records no event.
func (s *Server) handlePublishRuleVersion(ctx context.Context, req *idBody[tenantRequest]) (*out[bpctype.RulePackageVersion], error) {
	return actOnID(ctx, s, req, passport.PublishRuleVersion)
}
