package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/internal/demo"
)

// runVerify runs `bpc verify args…` and returns its output and exit status.
func runVerify(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"verify"}, args...), func(string) string { return "" }, &stdout, &stderr)
	if err == nil {
		return stdout.String() + stderr.String(), 0
	}
	return stdout.String() + stderr.String(), exitCode(err) // as main
}

// checkBpcVerify runs `bpc verify` on the artifact directory a demo run
// wrote, and on its export file: both verify; a copy with one byte flipped
// in the payload, the receipt or the signature does not, and the output
// names the check that failed.
func checkBpcVerify(t *testing.T, demoOut string) {
	t.Helper()
	out, code := runVerify(t, demoOut)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "VERIFIED: 10 checks passed")
	out, code = runVerify(t, filepath.Join(demoOut, demo.FileExport))
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "VERIFIED: 9 checks passed", "an export has no image to check")
	out, code = runVerify(t, filepath.Join(demoOut, demo.FileExportPDF))
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "a PDF export is for people", "the PDF is not what a verifier reads, and bpc verify says so")

	for file, check := range map[string]string{
		verify.FilePayload:   verify.CheckPayloadHash,
		verify.FileReceipt:   verify.CheckReceipt,
		verify.FileSignature: verify.CheckSignature,
	} {
		dir := copyDir(t, demoOut)
		path := filepath.Join(dir, file)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		b[len(b)/2] ^= 0x01
		require.NoError(t, os.WriteFile(path, b, 0o600))
		out, code := runVerify(t, dir)
		require.Equal(t, 1, code, "a flipped byte in %s: %s", file, out)
		require.Contains(t, out, "FAIL "+check, file)
		require.Contains(t, out, "NOT VERIFIED: ")
	}
}

func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	entries, err := os.ReadDir(from)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, e.Name()), b, 0o600))
	}
	return to
}

func TestVerifyUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"a", "b"}, {"--nope"}, {filepath.Join(t.TempDir(), "missing")}} {
		out, code := runVerify(t, args...)
		require.Equal(t, 2, code, "bpc verify %q: %s", args, out)
	}
	// A file that is not an export, an empty directory: not verified.
	notExport := filepath.Join(t.TempDir(), "x.json")
	require.NoError(t, os.WriteFile(notExport, []byte(`{"a":1}`), 0o600))
	for _, path := range []string{notExport, t.TempDir()} {
		out, code := runVerify(t, path)
		require.Equal(t, 1, code, out)
		require.Contains(t, out, "NOT VERIFIED")
	}
}
