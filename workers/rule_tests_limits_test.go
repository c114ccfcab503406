package workers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/rules"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/workers"
)

// heavyTests asks for a million cases, each a few milliseconds of work: a
// run of hours, within every limit, unless something stops it.
const heavyTests = "property slow: cases(1000000) seed(1) => forall x: Int. implies(true, " +
	"fold(list(1,2,3,4,5,6,7,8,9,10), 0, (a, y) => fold(list(1,2,3,4,5,6,7,8,9,10), a, (b, z) => " +
	"fold(list(1,2,3,4,5,6,7,8,9,10), b, (c, w) => c + 1))) == 1000);"

// withRuleLimits registers the workers with rule limits.
func withRuleLimits(l rules.Limits) func(*river.Workers, workers.Deps) {
	return func(w *river.Workers, d workers.Deps) {
		d.Limits.Rules = l
		workers.Register(w, d)
	}
}

// A version stored before the limits were lowered (the API refuses it
// today) fails its run at once with the limit's error; nothing runs and no
// run is recorded.
func TestRunRuleTestsWorkerLimits(t *testing.T) {
	t.Parallel()
	e := newPipeEnv(t, pipeOptions{register: withRuleLimits(rules.Limits{MaxNodes: 50, MaxCases: 100})})

	rv := e.draftRules(t, "field a : Int = 1;",
		"property p: cases(60) seed(1) => forall x: Int. implies(true, x == x);\n"+
			"property q: cases(60) seed(2) => forall x: Int. implies(true, x == x);")
	le := requireFailed(t, e.run(t, rulesArgs(rv.RulePackageVersionID, 1)), "VALIDATION_ERROR")
	require.Contains(t, le.Message, "BPC_RULES_MAX_CASES")
	require.Contains(t, le.Message, "at 2:10")
	require.Empty(t, e.runs(t, rv.RulePackageVersionID))
	require.Equal(t, bpctype.RulesDraft, e.ruleStatus(t, rv.RulePackageVersionID))

	rv = e.draftRules(t, "field a : Int = "+strings.Repeat("1 + ", 30)+"1;", "example e: { } => expect(a, ==, 31);")
	le = requireFailed(t, e.run(t, rulesArgs(rv.RulePackageVersionID, 1)), "RULE_PARSE_ERROR")
	require.Contains(t, le.Message, "BPC_RULES_MAX_NODES")
	require.Empty(t, e.runs(t, rv.RulePackageVersionID))
	e.Consistent(t)
}

// An operator's cancel (River's JobCancel, what POST /v1/jobs/{id}/cancel
// and River UI call) stops a running rule tests run, hours of work: the job
// is CANCELLED, and no run is recorded.
func TestRunRuleTestsWorkerStopsOnCancel(t *testing.T) {
	t.Parallel()
	e := newPipeEnv(t, pipeOptions{})
	rv := e.draftRules(t, "field a : Int = 1;", heavyTests)
	job := e.Enqueue(t, rulesArgs(rv.RulePackageVersionID, 1), "")
	e.WaitUntil(t, job.JobID, func(j bpctype.Job) bool { return j.Status == bpctype.StatusRunning })
	time.Sleep(200 * time.Millisecond) // well into the cases

	_, err := e.Client.JobCancel(e.Ctx, job.RiverJobID)
	require.NoError(t, err)
	done := e.Wait(t, job.JobID)
	require.Equal(t, bpctype.StatusCancelled, done.Status, "last_error %s", done.LastError)
	// River records its own text for it; the mirror reads it as CANCELLED.
	le := lastJobError(t, done)
	require.Equal(t, "CANCELLED", le.Code)
	require.Equal(t, "job cancelled remotely", le.Message)
	require.Equal(t, 1.0, testutil.ToFloat64(e.metrics.JobsCompleted.WithLabelValues(jobargs.KindRunRuleTests, bpctype.StatusCancelled)),
		"the observer counted the status the mirror shows")
	require.Empty(t, e.runs(t, rv.RulePackageVersionID))
	e.Consistent(t)
}

// A run stopped by its job's timeout fails the job for good: the run is
// deterministic, so a retry would only time out again.
func TestRunRuleTestsWorkerTimeout(t *testing.T) {
	t.Parallel()
	e := newPipeEnv(t, pipeOptions{})
	rv := e.draftRules(t, "field a : Int = 1;", heavyTests)
	w := &workers.RunRuleTestsWorker{Store: e.Store, Completer: workers.Completer{Store: e.Store}}
	ctx, cancel := context.WithTimeout(e.Ctx, 300*time.Millisecond)
	defer cancel()
	err := w.Work(ctx, &river.Job[jobargs.RunRuleTestsArgs]{JobRow: &rivertype.JobRow{ID: 1}, Args: *rulesArgs(rv.RulePackageVersionID, 1)})
	require.Equal(t, errcode.RuleTestsFailed, errcode.CodeOf(err), "%v", err)
	require.False(t, errcode.As(err).Retryable())
	require.Contains(t, err.Error(), "job timeout")
	require.Empty(t, e.runs(t, rv.RulePackageVersionID))
}
