package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// redoclyDir holds the pinned Redocly CLI (package.json and
// package-lock.json); node_modules is installed there by `npm ci`.
const redoclyDir = toolsDir + "/redocly"

// installRedocly runs `npm ci` unless node_modules already holds what
// package-lock.json pins (a stamp records the lock file installed).
func installRedocly(t *testing.T) string {
	t.Helper()
	lock, err := os.ReadFile(filepath.Join(redoclyDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	stamp := filepath.Join(redoclyDir, "node_modules", ".bpc-installed-lock.json")
	bin := filepath.Join(redoclyDir, "node_modules", ".bin", "redocly")
	if have, err := os.ReadFile(stamp); err != nil || !bytes.Equal(have, lock) {
		if out, err := run(redoclyDir, "npm", "ci", "--no-audit", "--no-fund"); err != nil {
			t.Fatalf("npm ci in tools/redocly: %v\n%s", err, out)
		}
		if err := os.WriteFile(stamp, lock, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// Redocly's recommended ruleset finds no error and no warning in any
// served document.
func TestRedoclyLint(t *testing.T) {
	t.Parallel()
	r := traffic(t)
	bin := installRedocly(t)
	dir := t.TempDir() // no redocly.yaml there: only the committed ignore list applies
	ignore, err := os.ReadFile(filepath.Join(redoclyDir, "lint-ignore.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	allowed := strings.Count(string(ignore), "\n    - ")
	for _, name := range r.docNames() {
		doc := r.docFile(t, dir, name)
		list := strings.Replace(string(ignore), "\nDOCUMENT:", "\n"+name+":", 1)
		if err := os.WriteFile(filepath.Join(dir, ".redocly.lint-ignore.yaml"), []byte(list), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "lint", "--extends", "recommended", "--format", "json", "--max-problems", "10000", doc)
		cmd.Dir = dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runErr := cmd.Run()
		var report struct {
			Totals struct {
				Errors, Warnings, Ignored int
			} `json:"totals"`
			Version  string `json:"version"`
			Problems []struct {
				RuleID   string `json:"ruleId"`
				Severity string `json:"severity"`
				Message  string `json:"message"`
				Location []struct {
					Pointer string `json:"pointer"`
				} `json:"location"`
			} `json:"problems"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
			t.Fatalf("redocly lint %s did not report JSON (%v, exit %v):\n%s\n%s", name, err, runErr, stdout.String(), stderr.String())
		}
		var b strings.Builder
		for _, p := range report.Problems {
			ptr := ""
			if len(p.Location) > 0 {
				ptr = p.Location[0].Pointer
			}
			fmt.Fprintf(&b, "\n  %s %s at %s: %s", p.Severity, p.RuleID, ptr, p.Message)
		}
		t.Logf("Redocly CLI %s, recommended, %s: %d errors, %d warnings, %d ignored (tools/redocly/lint-ignore.yaml)%s", report.Version, name,
			report.Totals.Errors, report.Totals.Warnings, report.Totals.Ignored, b.String())
		if report.Totals.Errors+report.Totals.Warnings > 0 || report.Totals.Ignored > allowed || runErr != nil {
			t.Errorf("Redocly (recommended) on the served document %s: %d errors, %d warnings (exit: %v)",
				name, report.Totals.Errors, report.Totals.Warnings, runErr)
		}
	}
}
