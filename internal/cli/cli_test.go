package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
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
	require.Equal(t, 2, ExitCode(err), "a usage error")
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

// unreachableDB is a DATABASE_URL nothing listens on: a subcommand that
// tried to act on it would fail.
const unreachableDB = "postgres://postgres@127.0.0.1:1/bpc?sslmode=disable&connect_timeout=2"

// Every subcommand's --help and -h print its help to stdout and exit 0
// without doing anything: no database (unreachable, so an attempt would
// be an error), no request to BPC_URL, no listener, no output directory.
func TestEverySubcommandsHelpPrintsHelpAndDoesNothing(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	out := filepath.Join(t.TempDir(), "demo-out")
	getenv := func(k string) string {
		return map[string]string{
			"DATABASE_URL": unreachableDB, "BPC_ENV": "test", "BPC_ADMIN_TOKEN": "help-must-not-use-this-token-0123456789",
			"BPC_URL": srv.URL, "BPC_DEMO_OUT": out, "BPC_HTTP_ADDR": "127.0.0.1:0",
		}[k]
	}
	require.Len(t, commands, 8, "a new subcommand gets a row below")
	type tc struct {
		name string
		args []string
	}
	var cases []tc
	for _, c := range commands {
		for _, h := range []string{"--help", "-h", "-help"} {
			cases = append(cases, tc{c.name, []string{c.name, h}})
		}
		cases = append(cases, tc{c.name, []string{"help", c.name}})
	}
	// Help after flags that would make the subcommand act.
	cases = append(cases,
		tc{"serve", []string{"serve", "--role=api", "--migrate", "--help"}},
		tc{"tick", []string{"tick", "--max-jobs", "1", "-h"}},
		tc{"doctor", []string{"doctor", "--json", "--help"}},
		tc{"webhook-echo", []string{"webhook-echo", "--addr", "127.0.0.1:0", "--secret", testSecret, "--help"}},
		tc{"demo", []string{"demo", "--url", srv.URL, "--out", out, "-h"}},
	)
	for _, c := range cases {
		t.Run(strings.Join(c.args, "_"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // did not hang
			defer cancel()
			var stdout, stderr bytes.Buffer
			err := Run(ctx, c.args, getenv, &stdout, &stderr)
			require.NoError(t, err, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
			cmd, ok := lookup(c.name)
			require.True(t, ok)
			require.True(t, strings.HasPrefix(stdout.String(), "Usage:\n  "+cmd.synopsis+"\n\n"), stdout.String())
			require.Contains(t, stdout.String(), strings.Split(cmd.about, "\n")[0])
			require.Empty(t, stderr.String(), "nothing started, nothing logged")
		})
	}
	// Flags are listed with their defaults.
	var stdout bytes.Buffer
	require.NoError(t, Run(t.Context(), []string{"tick", "--help"}, getenv, &stdout, io.Discard))
	require.Contains(t, stdout.String(), "\nFlags:\n")
	require.Contains(t, stdout.String(), "-max-jobs int")
	require.Contains(t, stdout.String(), `(default 1000)`)

	require.Zero(t, hits.Load(), "no request reached BPC_URL")
	require.NoDirExists(t, out)
}

func TestHelpListsEverySubcommand(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"help", "--help", "-h"} {
		var stdout, stderr bytes.Buffer
		require.NoError(t, Run(t.Context(), []string{arg}, func(string) string { return "" }, &stdout, &stderr))
		require.Empty(t, stderr.String())
		for _, c := range commands {
			require.Contains(t, stdout.String(), "\n  "+c.synopsis+"\n", arg)
		}
	}
	err := Run(t.Context(), []string{"help", "frobnicate"}, func(string) string { return "" }, io.Discard, io.Discard)
	require.EqualError(t, err, `unknown subcommand "frobnicate"`)
	require.Equal(t, 2, ExitCode(err))
}

// A wrong flag or argument is a usage error (status 2) that points at the
// help, and does nothing either.
func TestAWrongFlagIsAUsageErrorThatPointsAtTheHelp(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string { return map[string]string{"DATABASE_URL": unreachableDB}[k] }
	for _, args := range [][]string{{"migrate", "--force"}, {"serve", "--bogus"}, {"doctor", "extra"}, {"version", "-v"}} {
		var stdout, stderr bytes.Buffer
		err := Run(t.Context(), args, getenv, &stdout, &stderr)
		require.Error(t, err, "%v", args)
		require.Equal(t, 2, ExitCode(err), "%v: %v", args, err)
		require.Contains(t, err.Error(), "see bpc "+args[0]+" --help")
		require.Empty(t, stdout.String())
	}
}
