package passport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/rules"
	"github.com/bpc-platform/bpc/store"
)

// MaxRuleSourceBytes bounds each of a version's DSL and tests sources.
const MaxRuleSourceBytes = 1 << 20

// RuleSources are the two sources of a rule package version: the rules
// (BPC-RULES-1) and their tests.
type RuleSources struct {
	DSL   string
	Tests string
}

// CheckRuleSources checks both sources within limits: present, at most
// MaxRuleSourceBytes, and parsing and type-checking (a source beyond the
// rule limits is RULE_PARSE_ERROR at its line:col, tests asking for more
// cases than allowed VALIDATION_ERROR). An error names the source it is in
// (details.source: dsl_source or tests_source).
func CheckRuleSources(limits rules.Limits, src RuleSources) (CheckedRuleSources, error) {
	for _, s := range []struct{ field, value string }{{"dsl_source", src.DSL}, {"tests_source", src.Tests}} {
		switch {
		case strings.TrimSpace(s.value) == "":
			return CheckedRuleSources{}, errcode.Invalid(s.field, "is required")
		case len(s.value) > MaxRuleSourceBytes:
			return CheckedRuleSources{}, errcode.Invalid(s.field, "is %d bytes, limit is %d", len(s.value), MaxRuleSourceBytes)
		}
	}
	prog, err := limits.Check(src.DSL)
	if err != nil {
		return CheckedRuleSources{}, sourceError("dsl_source", err)
	}
	if _, err := limits.CheckTests(prog, src.Tests); err != nil {
		return CheckedRuleSources{}, sourceError("tests_source", err)
	}
	return CheckedRuleSources{src: src}, nil
}

// CheckedRuleSources are sources CheckRuleSources accepted; only it makes
// them, so a version can only be created from checked sources.
type CheckedRuleSources struct {
	src RuleSources
}

// sourceError returns a rules error as is (its code, line and col), naming
// the source it is in; the rules package's own "field" detail is the rule
// field path, so the request field goes to "source".
func sourceError(source string, err error) error {
	e := errcode.As(err)
	if e == nil {
		return err
	}
	out := *e
	out.Details = maps.Clone(e.Details)
	if out.Details == nil {
		out.Details = map[string]any{}
	}
	out.Details["source"] = source
	out.Message = source + ": " + e.Message
	return &out
}

// CreateRuleVersion stores checked sources as the package's next DRAFT
// version: no job ever works on a source beyond the limits.
func CreateRuleVersion(ctx context.Context, t Tx, tenantID, packageID uuid.UUID, src CheckedRuleSources) (bpctype.RulePackageVersion, error) {
	return t.Q.CreateRulePackageVersion(ctx, tenantID, packageID, src.src.DSL, src.src.Tests)
}

// PublishRuleVersion publishes a VALIDATED version and records
// rules.published; publishing a PUBLISHED version again changes nothing and
// records nothing.
func PublishRuleVersion(ctx context.Context, t Tx, tenantID, id uuid.UUID) (bpctype.RulePackageVersion, error) {
	v, changed, err := MarkRuleVersionPublished(ctx, t.Q, tenantID, id)
	if err != nil || !changed {
		return v, err
	}
	return v, t.Event(ctx, tenantID, AggregateRulePackageVersion, id, EventRulesPublished, map[string]any{
		"rule_package_id": v.RulePackageID, "version": v.Version,
		"dsl_sha256": v.DSLSHA256, "tests_sha256": v.TestsSHA256,
	})
}

// MinRuleTestCases is how many passing cases a run needs to validate a
// rule package version (SPEC §7).
const MinRuleTestCases = 500

// MarkRuleVersionPublished publishes a VALIDATED version (one with a
// passing run of at least MinRuleTestCases cases). A DRAFT version is
// RULE_TESTS_FAILED; publishing a PUBLISHED version again changes nothing
// (changed is false). It records no event (PublishRuleVersion does).
func MarkRuleVersionPublished(ctx context.Context, q *store.Queries, tenantID, id uuid.UUID) (v bpctype.RulePackageVersion, changed bool, err error) {
	v, err = q.LockRulePackageVersion(ctx, tenantID, id)
	if err != nil {
		return bpctype.RulePackageVersion{}, false, err
	}
	switch v.Status {
	case bpctype.RulesPublished:
		v.DSLSource, v.TestsSource = "", ""
		return v, false, nil
	case bpctype.RulesDraft:
		return bpctype.RulePackageVersion{}, false, errcode.New(errcode.RuleTestsFailed,
			"rule package version %s has no passing tests run with at least %d cases; run its tests first", id, MinRuleTestCases)
	}
	v, err = q.SetRulePackageVersionPublished(ctx, tenantID, id)
	return v, true, err
}

// StoreRuleTestsRun stores a run whose status the caller decided: a PASSED
// run with at least MinRuleTestCases cases moves a DRAFT version to
// VALIDATED. A run of the same River job stored before is returned instead
// (existed). It records no event (RecordRuleTestsRun does).
func StoreRuleTestsRun(ctx context.Context, q *store.Queries, run bpctype.RuleTestsRun) (bpctype.RuleTestsRun, bool, error) {
	stored, existed, err := q.InsertRuleTestsRun(ctx, run)
	if err != nil || existed {
		return stored, existed, err
	}
	if stored.Status == bpctype.RuleTestsPassed && stored.TotalCases >= MinRuleTestCases {
		if err := q.SetRulePackageVersionValidated(ctx, run.TenantID, run.RulePackageVersionID); err != nil {
			return bpctype.RuleTestsRun{}, false, err
		}
	}
	return stored, false, nil
}

// RuleTestsResult is a finished run of a version's tests, not yet recorded.
type RuleTestsResult struct {
	TenantID             uuid.UUID
	RulePackageVersionID uuid.UUID
	Seed                 int64
	Report               *rules.TestReport
}

// Status is PASSED for a run with no failure and at least
// MinRuleTestCases cases, else FAILED.
func (r RuleTestsResult) Status() string {
	if r.Report.Failed == 0 && r.Report.TotalCases >= MinRuleTestCases {
		return bpctype.RuleTestsPassed
	}
	return bpctype.RuleTestsFailed
}

// RunRuleTests runs a version's example and property tests with seed. It
// reads the sources on q and holds no transaction while it runs: a run may
// take as long as its job allows. The run follows ctx: a cancel stops it
// within milliseconds; a deadline stops it with RULE_TESTS_FAILED (a run is
// deterministic, so running it again would time out again).
func RunRuleTests(ctx context.Context, q *store.Queries, limits rules.Limits, tenantID, versionID uuid.UUID, seed int64) (RuleTestsResult, error) {
	rv, err := q.GetRulePackageVersion(ctx, tenantID, versionID, true)
	if err != nil {
		return RuleTestsResult{}, err
	}
	prog, err := limits.Check(rv.DSLSource)
	if err != nil {
		return RuleTestsResult{}, err
	}
	start := time.Now()
	report, err := limits.RunTests(ctx, prog, rv.TestsSource, uint64(seed))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return RuleTestsResult{}, errcode.New(errcode.RuleTestsFailed, "the tests run was stopped by the job timeout after %s; "+
				"a run is deterministic, so it is not retried: ask for fewer or cheaper cases", time.Since(start).Round(time.Second))
		}
		return RuleTestsResult{}, err
	}
	return RuleTestsResult{TenantID: tenantID, RulePackageVersionID: versionID, Seed: seed, Report: report}, nil
}

// RecordRuleTestsRun records a run made by River job riverJobID — which
// moves a DRAFT version to VALIDATED when it passed — and records
// rules.tests_run. A job recording its run again finds the first record
// (existed) and records no second event.
func RecordRuleTestsRun(ctx context.Context, t Tx, r RuleTestsResult, riverJobID int64) (run bpctype.RuleTestsRun, existed bool, err error) {
	status := r.Status()
	var first json.RawMessage
	switch {
	case r.Report.FirstFailure != nil:
		if first, err = json.Marshal(r.Report.FirstFailure); err != nil {
			return bpctype.RuleTestsRun{}, false, errcode.Wrap(errcode.Internal, err, "error encoding the first failure: %s", err.Error())
		}
	case status == bpctype.RuleTestsFailed:
		first, _ = json.Marshal(map[string]any{"message": fmt.Sprintf("only %d cases; at least %d are required", r.Report.TotalCases, MinRuleTestCases)})
	}
	run, existed, err = StoreRuleTestsRun(ctx, t.Q, bpctype.RuleTestsRun{
		TenantID: r.TenantID, RulePackageVersionID: r.RulePackageVersionID, Seed: r.Seed, Status: status,
		TotalCases: int32(r.Report.TotalCases), Passed: int32(r.Report.Passed), Failed: int32(r.Report.Failed),
		FirstFailure: first, RiverJobID: &riverJobID,
	})
	if err != nil || existed {
		return run, existed, err
	}
	return run, false, t.Event(ctx, r.TenantID, AggregateRulePackageVersion, r.RulePackageVersionID, EventTestsRun,
		map[string]any{"rule_tests_run_id": run.RuleTestsRunID, "status": status, "seed": r.Seed,
			"total_cases": r.Report.TotalCases, "passed": r.Report.Passed, "failed": r.Report.Failed})
}
