package cli

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/testlog"
)

const (
	testSecret  = "whsec-0123456789abcdef"
	testTimeout = 20 * time.Second
	pollEvery   = 10 * time.Millisecond
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer = testlog.Buffer

func TestRunNeedsAKnownSubcommandAndShowsTheUsage(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	var stdout, stderr bytes.Buffer

	err := Run(context.Background(), nil, noEnv, &stdout, &stderr)
	require.EqualError(t, err, "a subcommand is required")
	require.Equal(t, 1, ExitCode(err))
	require.Equal(t, usage, stderr.String())
	require.Empty(t, stdout.String())

	stderr.Reset()
	require.NoError(t, Run(context.Background(), []string{"help"}, noEnv, &stdout, &stderr))
	require.Equal(t, usage, stdout.String())
	require.Empty(t, stderr.String())

	stdout.Reset()
	err = Run(context.Background(), []string{"verify"}, noEnv, &stdout, &stderr)
	require.EqualError(t, err, "verify takes exactly one PATH")
	require.Equal(t, 2, ExitCode(err), "a usage error of bpc verify")
	err = Run(context.Background(), []string{"verify", "/nonexistent/bpc-export"}, noEnv, &stdout, &stderr)
	require.Equal(t, 2, ExitCode(err), "no such path is a usage error")
	require.Empty(t, stdout.String())
}
