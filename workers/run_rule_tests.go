package workers

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/core/rules"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// RunRuleTestsWorker runs a rule package version's example and property
// tests with the job's seed and records the run (passport.RunRuleTests,
// passport.RecordRuleTestsRun); a passing run moves a DRAFT version to
// VALIDATED, any other leaves it DRAFT with the first failure recorded. The
// job succeeds either way: it ran the tests.
//
// A run that cannot start or finish records no run and fails the job: a
// source beyond the rule limits (Limits: RULE_PARSE_ERROR, or
// VALIDATION_ERROR naming BPC_RULES_MAX_CASES when the tests ask for more
// cases in total), or a run stopped by the job timeout (RULE_TESTS_FAILED).
// The run follows the job's context: an operator's cancel, a lost lease or
// a shutdown stops it within milliseconds, and River records that outcome.
type RunRuleTestsWorker struct {
	river.WorkerDefaults[jobargs.RunRuleTestsArgs]
	Store     *store.Queries
	Limits    rules.Limits
	Completer Completer
}

// Work runs the tests.
func (w *RunRuleTestsWorker) Work(ctx context.Context, job *river.Job[jobargs.RunRuleTestsArgs]) error {
	a := job.Args
	res, err := passport.RunRuleTests(ctx, w.Store, w.Limits, a.TenantID, a.RulePackageVersionID, a.Seed)
	if err != nil {
		return err
	}
	return completeInTx(ctx, w.Completer, job, func(t passport.Tx) error {
		run, existed, err := passport.RecordRuleTestsRun(ctx, t, res, job.ID)
		if err != nil || existed {
			return err
		}
		r := res.Report
		return recordOutput(ctx, map[string]any{"rule_tests_run_id": run.RuleTestsRunID, "status": run.Status,
			"total_cases": r.TotalCases, "passed": r.Passed, "failed": r.Failed})
	})
}
