package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/rules"
	"github.com/bpc-platform/bpc/internal/service"
)

// The hostile rule sources of the reported outage, posted as a rule package
// version: each is a 422 with its code and line:col (found where the limit
// is crossed), and the service stays ready. (Before the limits, the first one killed every
// process with a stack overflow.)
func TestRuleVersionLimitsAtTheAPI(t *testing.T) {
	t.Parallel()
	d := domainAPI{h: newHarness(t, service.RoleAPI, map[string]string{"BPC_RULES_MAX_CASES": "1000"}), tenant: devTenant}
	var pkg bpctype.RulePackage
	d.do(http.MethodPost, "/v1/rule-packages", map[string]any{"name": "hostile"}, http.StatusCreated, &pkg)
	versions := "/v1/rule-packages/" + pkg.RulePackageID.String() + "/versions"
	okRules, okTests := "field a : Int = 1;", "example e: { } => expect(a, ==, 1);"

	chain := "field a : Int = 1" + strings.Repeat("+1", (1<<20-18)/2) + ";" // 1 MiB
	require.GreaterOrEqual(t, len(chain), 1<<20-2)
	deepJSON := `example e: { fact f("t", "k") = ` + strings.Repeat("[", 1<<19-64) + "1" + strings.Repeat("]", 1<<19-64) + "; } => expect(a, ==, 1);"
	var manyCases strings.Builder
	for i := range 80 {
		fmt.Fprintf(&manyCases, "property p%d: cases(1000000) seed(%d) => forall x: Int. implies(true, x == x);\n", i, i)
	}
	cases := []struct {
		name, dsl, tests, source, code, message string
		line, col                               int
	}{
		{"1 MiB operator chain", chain, okTests, "dsl_source", "RULE_PARSE_ERROR", "nesting deeper than 200", 1, 17 + 2*rules.MaxDepth - 1},
		{"deep unary", "field a : Bool = " + strings.Repeat("!", 1<<20-32) + "true;", okTests, "dsl_source", "RULE_PARSE_ERROR", "nesting deeper than 200", 1, 17 + rules.MaxDepth},
		{"deep parentheses", "field a : Int = " + strings.Repeat("(", 1<<20-32) + "1;", okTests, "dsl_source", "RULE_PARSE_ERROR", "nesting deeper than 200", 1, 17 + rules.MaxDepth},
		{"long && chain", "field a : Bool = true" + strings.Repeat(" && true", (1<<20-32)/8) + ";", okTests, "dsl_source", "RULE_PARSE_ERROR", "nesting deeper than 200", 1, 22 + 8*(rules.MaxDepth-1) + 1},
		{"node budget", "field a : Int = len(list(1" + strings.Repeat(",1", rules.DefaultMaxNodes) + "));", okTests, "dsl_source", "RULE_PARSE_ERROR", "BPC_RULES_MAX_NODES", 1, 26 + 2*(rules.DefaultMaxNodes-1)},
		{"deep fact JSON in tests", okRules, deepJSON, "tests_source", "RULE_PARSE_ERROR", "nesting deeper than 200", 1, 33 + rules.MaxDepth},
		{"chain in tests", okRules, "example e: { } => expect(a, ==, 1" + strings.Repeat("+1", 1<<19-64) + ");", "tests_source", "RULE_PARSE_ERROR", "nesting deeper than 200", 1, 33 + 2*rules.MaxDepth - 1},
		{"80M cases", okRules, manyCases.String(), "tests_source", "VALIDATION_ERROR", "BPC_RULES_MAX_CASES", 1, 10},
	}
	for _, tc := range cases {
		env := d.fail(http.MethodPost, versions, map[string]any{"dsl_source": tc.dsl, "tests_source": tc.tests},
			http.StatusUnprocessableEntity, tc.code)
		require.Equal(t, tc.source, env.Error.Details["source"], tc.name)
		require.Contains(t, env.Error.Message, tc.message, tc.name)
		require.EqualValues(t, tc.line, env.Error.Details["line"], "%s: %s", tc.name, env.Error.Message)
		require.EqualValues(t, tc.col, env.Error.Details["col"], "%s: %s", tc.name, env.Error.Message)
		require.Equal(t, http.StatusOK, d.h.call(http.MethodGet, "/v1/health/ready", nil, nil), tc.name)
	}
	// Within the limits, the version is created.
	d.do(http.MethodPost, versions, map[string]any{"dsl_source": okRules,
		"tests_source": "property p: cases(999) seed(1) => forall x: Int. implies(true, x == x);\n" + okTests}, http.StatusCreated, nil)
}

// The hostile suite's cancel: a RUN_RULE_TESTS job of a million expensive
// cases (within every limit) is cancelled through POST /v1/jobs/{id}/cancel
// while it runs (hours of work), and is CANCELLED instead of running on.
func TestRuleTestsCancelThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, nil)
	d := domainAPI{h: h, tenant: devTenant}
	var pkg bpctype.RulePackage
	d.do(http.MethodPost, "/v1/rule-packages", map[string]any{"name": "slow"}, http.StatusCreated, &pkg)
	var v bpctype.RulePackageVersion
	ten := "list(1,2,3,4,5,6,7,8,9,10)"
	slow := "property slow: cases(1000000) seed(1) => forall x: Int. implies(true, fold(" + ten + ", 0, (a, y) => fold(" + ten +
		", a, (b, z) => fold(" + ten + ", b, (c, w) => c + 1))) == 1000);"
	d.do(http.MethodPost, "/v1/rule-packages/"+pkg.RulePackageID.String()+"/versions",
		map[string]any{"dsl_source": "field a : Int = 1;", "tests_source": slow}, http.StatusCreated, &v)
	var run struct {
		Job bpctype.Job `json:"job"`
	}
	d.do(http.MethodPost, "/v1/rule-package-versions/"+v.RulePackageVersionID.String()+"/test", nil, http.StatusAccepted, &run)
	jobPath := "/v1/jobs/" + run.Job.JobID.String()
	h.eventually("the tests run is RUNNING", func() bool { return h.job(run.Job.JobID).Status == bpctype.StatusRunning })
	time.Sleep(300 * time.Millisecond)

	require.Equal(t, http.StatusOK, h.call(http.MethodPost, jobPath+"/cancel?tenant_id="+devTenant, nil, nil))
	require.Equal(t, bpctype.StatusCancelled, h.waitJob(run.Job.JobID).Status)
	raw := d.do(http.MethodGet, "/v1/rule-package-versions/"+v.RulePackageVersionID.String()+"/test-runs", nil, http.StatusOK, nil)
	require.JSONEq(t, `{"items":[]}`, string(raw), "a cancelled run records nothing")
	require.Equal(t, http.StatusOK, h.call(http.MethodGet, "/v1/health/ready", nil, nil))
	h.requireConsistent()
}
