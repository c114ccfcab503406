package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/service"
)

// The README's daily routine is scripts/walkthrough.sh: the README shows its
// commands verbatim, and the script runs green against a real service — a
// dead-lettered delivery, the endpoint fixed, the River UI retry delivered.
func TestReadmeWalkthrough(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	script, err := os.ReadFile(filepath.Join(root, "scripts/walkthrough.sh"))
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	_, body, ok := strings.Cut(string(script), "# --- README: the daily routine ---\n")
	require.True(t, ok, "walkthrough.sh has no README marker")
	body, _, ok = strings.Cut(body, "# --- end ---\n")
	require.True(t, ok, "walkthrough.sh has no end marker")
	require.Contains(t, string(readme), body, "README.md's daily routine differs from scripts/walkthrough.sh")

	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("the walk-through needs curl: %v", err)
	}
	const token = "local-admin-token-123"
	svc := startService(t, service.RoleAll, map[string]string{
		"BPC_ADMIN_TOKEN":          token,
		"BPC_JOBS_BACKOFF_UNIT_MS": "100",
	})
	hook := freeLoopbackAddr(t)
	cmd := exec.Command("bash", filepath.Join(root, "scripts/walkthrough.sh"))
	cmd.Env = append(os.Environ(), "BPC_URL="+svc.base, "BPC_ADMIN_TOKEN="+token, "BPC="+svc.bin, "HOOK="+hook)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "scripts/walkthrough.sh:\n%s", out)
	require.Contains(t, string(out), "walkthrough: OK")
	t.Logf("walk-through in %s", time.Since(start).Round(time.Millisecond))
	svc.requireAlive()
	require.True(t, svc.doctor().OK)
}

// freeLoopbackAddr returns a 127.0.0.1 address nothing listens on (now).
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
