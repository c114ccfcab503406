package e2e

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bpc-platform/bpc/internal/cli"
)

// TestMain removes the bpc binary the process tests built (bpcBinary)
// once every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	if bpcBinPath != "" {
		_ = os.RemoveAll(filepath.Dir(bpcBinPath))
	}
	os.Exit(code)
}

// run is the bpc command line as main runs it, with the test's arguments,
// environment and output.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return cli.Run(ctx, args, getenv, stdout, stderr)
}

// exitCode is the exit status main gives an error of run.
func exitCode(err error) int { return cli.ExitCode(err) }

// displayAddr turns the listen address of a service's banner into one a
// client can dial: the loopback address for a wildcard host, as the
// banner's own URLs do.
func displayAddr(addr string) string {
	if rest, ok := strings.CutPrefix(addr, "[::]:"); ok {
		return "127.0.0.1:" + rest
	}
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}
