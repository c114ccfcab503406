package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// The monitoring the repository ships for operators: Prometheus alert
// rules (deploy/prometheus) and a Grafana dashboard (deploy/grafana).
var (
	alertRules    = filepath.Join("..", "..", "deploy", "prometheus", "alerts.yml")
	alertTests    = filepath.Join("..", "..", "deploy", "prometheus", "alerts_test.yml")
	grafanaBoards = filepath.Join("..", "..", "deploy", "grafana", "bpc-jobs.json")
)

// promtool is Prometheus' own checker (Debian's prometheus package;
// scripts/deps.sh installs it). Missing, the test fails: never skipped.
func promtool(t *testing.T, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool not found: run scripts/deps.sh (Debian package prometheus)")
	out, err := exec.Command(bin, args...).CombinedOutput()
	require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
}

// dashboard is the part of a Grafana dashboard the checks read.
type dashboard struct {
	UID    string  `json:"uid"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(grafanaBoards)
	require.NoError(t, err)
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(raw))
	require.NoError(t, dec.Decode(&d), "dashboard JSON")
	return d
}

// dashboardExprs returns every panel's PromQL with Grafana's variables
// replaced by what they stand for, so that promtool can parse them.
func dashboardExprs(t *testing.T) []string {
	d := readDashboard(t)
	vars := strings.NewReplacer("$__rate_interval", "5m", "$queue", ".*")
	var exprs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, vars.Replace(tg.Expr))
		}
	}
	return exprs
}

// TestAlertRules checks the alert rules with promtool and runs their unit
// tests: each alert fires on the series it is for, and not on the others.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	promtool(t, "check", "rules", alertRules)
	promtool(t, "test", "rules", alertTests)
}

// TestDashboard checks the dashboard's shape (unique panel ids, every query
// panel on the datasource variable) and that every query is valid PromQL:
// promtool checks them as recording rules.
func TestDashboard(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	require.NotEmpty(t, d.UID)
	seen := map[int]bool{}
	for _, p := range d.Panels {
		require.False(t, seen[p.ID], "panel id %d used twice", p.ID)
		seen[p.ID] = true
		if p.Type == "row" {
			continue
		}
		require.NotNil(t, p.Datasource, "panel %q has no datasource", p.Title)
		require.Equal(t, "${datasource}", p.Datasource.UID, "panel %q", p.Title)
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
	}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, expr := range dashboardExprs(t) {
		q, err := json.Marshal(expr) // a JSON string is a YAML string
		require.NoError(t, err)
		fmt.Fprintf(&rules, "      - record: dashboard_query_%d\n        expr: %s\n", i, q)
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	require.NoError(t, os.WriteFile(path, []byte(rules.String()), 0o600))
	promtool(t, "check", "rules", path)
}

// metricName finds the service's metric names in PromQL.
var metricName = regexp.MustCompile(`\bbpc_[a-z0-9_]+\b`)

// TestMonitoringNamesExportedMetrics starts the service (with the queue
// trigger on, whose gauge the rules watch) and checks that every metric the
// alert rules and the dashboard name is one it exports: a renamed metric
// must not leave an alert silently matching nothing.
func TestMonitoringNamesExportedMetrics(t *testing.T) {
	t.Parallel()
	rules, err := os.ReadFile(alertRules)
	require.NoError(t, err)
	named := map[string]bool{}
	for _, m := range metricName.FindAllString(string(rules), -1) {
		named[m] = true
	}
	for _, expr := range dashboardExprs(t) {
		for _, m := range metricName.FindAllString(expr, -1) {
			named[m] = true
		}
	}
	require.NotEmpty(t, named)

	h := newHarness(t, "all", map[string]string{"BPC_QUEUE_ENABLED": "true", "BPC_RATE_LIMIT_RPS": "1", "BPC_RATE_LIMIT_BURST": "2"})
	// Counters with labels appear with their first event: one refused
	// credential and one rate-limited public request.
	status, _ := h.raw(http.MethodGet, "/v1/jobs", nil, nil)
	require.Equal(t, http.StatusUnauthorized, status)
	for status != http.StatusTooManyRequests {
		status, _ = h.raw(http.MethodGet, "/public/v1/passport-versions/00000000-0000-4000-8000-000000000000", nil, nil)
	}
	status, scrape := h.raw(http.MethodGet, "/v1/metrics", nil, map[string]string{"Authorization": "Bearer " + testToken})
	require.Equal(t, http.StatusOK, status)
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(scrape))
	require.NoError(t, err)

	var missing []string
	for name := range named {
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if f, ok := families[strings.TrimSuffix(name, suffix)]; ok && strings.HasSuffix(name, suffix) &&
				f.GetType().String() == "HISTOGRAM" {
				base = strings.TrimSuffix(name, suffix)
			}
		}
		if _, ok := families[base]; !ok {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	require.Empty(t, missing, "metrics named by deploy/ that the service does not export")
}
