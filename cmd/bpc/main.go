// Command bpc runs the Battery Passport Compiler job service.
//
//	bpc serve [--role=all|worker|api] [--migrate]   run the service
//	bpc migrate                                       apply migrations
//	bpc tick [--max-duration 60s] [--max-jobs 1000]   work the due jobs once, then exit
//	bpc doctor [--json]                               check River ↔ SSOT consistency
//	bpc webhook-echo --secret S                       a verifying webhook receiver
//	bpc demo [--url U] [--out DIR] [--tenant T]       walk the NMC811 sample through the pipeline
//	bpc verify PATH                                   verify an export or artifact directory offline
//	bpc version                                       version, commit, Go version, expected schema
//
// `bpc SUBCOMMAND --help` (or -h) prints a subcommand's help and does
// nothing else.
//
// The subcommands live in internal/cli; main gives them the process's
// arguments, environment, output and signals.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/bpc-platform/bpc/internal/cli"
	"github.com/bpc-platform/bpc/internal/redact"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cli.Run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bpc:", redact.String(err.Error()))
		os.Exit(cli.ExitCode(err))
	}
}
