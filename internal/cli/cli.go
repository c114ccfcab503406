// Package cli is the bpc command line: Run parses a subcommand's flags and
// environment and calls the package that does the work (service, tick,
// doctor, demo, core/verify). cmd/bpc's main only wires the process to it,
// and the end-to-end tests start the whole service through it in-process.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bpc-platform/bpc/internal/doctor"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/migrations"
)

const usage = `bpc — Battery Passport Compiler job service

Usage:
  bpc serve [--role=all|worker|api] [--migrate]
        Run the service. all: workers + admin API + River UI (default);
        worker: work jobs (serves health and metrics only); api: admin API
        and River UI without working jobs. Refuses a schema that is behind
        unless --migrate is given.
  bpc migrate
        Apply River's and the service's migrations, then exit.
  bpc tick [--max-duration 60s] [--max-jobs 1000] [--maintenance=true]
        For cron-style deployments: work the jobs due now (as the worker
        role would) and exit once none is left, --max-jobs attempts were
        worked or --max-duration passed; running jobs then get
        BPC_WORKER_SHUTDOWN_TIMEOUT_MS to finish. Jobs scheduled later
        (retries in backoff) wait for the next tick. --maintenance also runs
        the maintenance jobs due in their interval. Prints a one-line
        summary; exits non-zero only on errors.
  bpc doctor [--json]
        Compare River's jobs with the SSOT jobs table, verify every tenant's
        audit chain and the schema; exit 1 on any problem.
  bpc webhook-echo --secret S [--addr 127.0.0.1:9999] [--fail]
        A webhook receiver for trying things out: verifies X-BPC-Signature
        and prints each delivery; --fail answers 500.
  bpc demo [--url http://127.0.0.1:8080] [--out demo-out] [--tenant ID]
        Walk the NMC811 sample battery through the whole pipeline over the
        HTTP API of a running service (BPC_URL, BPC_ADMIN_TOKEN,
        BPC_DEMO_TENANT, BPC_DEMO_OUT), write the artifacts to the output
        directory and verify them offline.
  bpc verify PATH
        Verify an export file (BPC-EXPORT-1) or an artifact directory such as
        demo-out/ offline, one line per check: exit 0 verified, 1 not, 2 usage.

Configuration is read from the environment; see README.md.
`

// Run executes the subcommand args[0] with the rest of args as its flags,
// reading its configuration through getenv and writing to stdout and
// stderr; main passes the process's own, tests their own. The error, if
// any, is for main to print (redacted) and to turn into the exit status
// with ExitCode.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("a subcommand is required")
	}
	switch args[0] {
	case "serve":
		return cmdServe(ctx, args[1:], getenv, stdout, stderr)
	case "migrate":
		return cmdMigrate(ctx, getenv, stdout)
	case "tick":
		return cmdTick(ctx, args[1:], getenv, stdout, stderr)
	case "doctor":
		return cmdDoctor(ctx, args[1:], getenv, stdout)
	case "webhook-echo":
		return cmdWebhookEcho(ctx, args[1:], stdout, stderr)
	case "demo":
		return cmdDemo(ctx, args[1:], getenv, stdout, stderr)
	case "verify":
		return cmdVerify(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown subcommand %q", args[0])
	}
}

func cmdServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	role := fs.String("role", service.RoleAll, "all, worker or api")
	migrate := fs.Bool("migrate", false, "apply pending migrations before starting")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch *role {
	case service.RoleAll, service.RoleWorker, service.RoleAPI:
	default:
		return fmt.Errorf("--role must be all, worker or api, got %q", *role)
	}
	cfg, pool, err := connect(ctx, getenv, service.LoadConfig)
	if err != nil {
		return err
	}
	defer pool.Close()
	logger := service.NewLogger(cfg, stdout)
	// The console span exporter's JSON lines go beside the banner, apart
	// from the JSON log on stdout.
	cfg.Tracing.Console = stderr

	if *migrate {
		if err := migrations.Up(ctx, pool, logger); err != nil {
			return err
		}
	}
	if err := requireCurrentSchema(ctx, pool, "run `bpc migrate` or `bpc serve --migrate`"); err != nil {
		return err
	}

	a, err := service.New(cfg, *role, logger, pool)
	if err != nil {
		return err
	}
	if err := a.Start(ctx); err != nil {
		a.Stop(context.Background())
		return err
	}
	printBanner(stderr, cfg, a.Addr(), *role)
	logger.Info("service started", slog.String("role", *role), slog.String("addr", a.Addr()),
		slog.String("worker_id", cfg.WorkerID), slog.String("env", cfg.Env))

	select {
	case <-ctx.Done():
	case err = <-a.ServeErr():
	}
	logger.Info("shutting down; a second signal forces exit",
		slog.Duration("shutdown_timeout", cfg.ShutdownTimeout))
	forceExitOnSecondSignal(logger)
	a.Stop(context.Background())
	logger.Info("service stopped")
	return err
}

// forceExitOnSecondSignal exits at once on another SIGINT/SIGTERM.
func forceExitOnSecondSignal(logger *slog.Logger) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ch
		logger.Error("second signal: exiting without waiting for jobs")
		os.Exit(2)
	}()
}

func printBanner(w io.Writer, cfg service.Config, addr, role string) {
	base := "http://" + displayAddr(addr)
	fmt.Fprintf(w, "\nBPC job service (%s, role %s) listening on %s\n", cfg.Env, role, addr)
	if role != service.RoleWorker {
		fmt.Fprintf(w, "  Admin API:  %s/v1   (Authorization: Bearer <token>)\n", base)
		fmt.Fprintf(w, "  River UI:   %s/riverui/   (any user name, the token as password)\n", base)
	}
	fmt.Fprintf(w, "  Health:     %s/v1/health/ready\n", base)
	if cfg.AdminTokenGenerated {
		fmt.Fprintf(w, "  Admin token (generated for this run; set BPC_ADMIN_TOKEN to keep one): %s\n", cfg.AdminToken)
	}
	fmt.Fprintln(w)
}

func displayAddr(addr string) string {
	if len(addr) > 0 && addr[0] == ':' {
		return "127.0.0.1" + addr
	}
	if len(addr) > 5 && addr[:5] == "[::]:" {
		return "127.0.0.1:" + addr[5:]
	}
	return addr
}

// connect loads the configuration with load (service.LoadConfig for the
// commands that work jobs, service.ToolConfig for the tools) and opens its
// pool, which the caller closes.
func connect(ctx context.Context, getenv func(string) string, load func(getenv func(string) string) (service.Config, error)) (service.Config, *pgxpool.Pool, error) {
	cfg, err := load(getenv)
	if err != nil {
		return service.Config{}, nil, err
	}
	pool, err := service.NewPool(ctx, cfg)
	return cfg, pool, err
}

// requireCurrentSchema fails unless the database schema is current; fix
// says how to bring it up to date.
func requireCurrentSchema(ctx context.Context, pool *pgxpool.Pool, fix string) error {
	st, err := migrations.Check(ctx, pool)
	if err != nil {
		return fmt.Errorf("error checking the schema (is the database reachable?): %w", err)
	}
	if !st.Current() {
		return fmt.Errorf("database schema is behind (%s): %s", st, fix)
	}
	return nil
}

func cmdMigrate(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, pool, err := connect(ctx, getenv, service.ToolConfig)
	if err != nil {
		return err
	}
	defer pool.Close()
	logger := service.NewLogger(cfg, stdout)
	if err := migrations.Up(ctx, pool, logger); err != nil {
		return err
	}
	logger.Info("schema is current")
	return nil
}

func cmdDoctor(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	_, pool, err := connect(ctx, getenv, service.ToolConfig)
	if err != nil {
		return err
	}
	defer pool.Close()

	rep, err := doctor.Check(ctx, pool)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		rep.WriteText(stdout)
	}
	if !rep.OK {
		return errors.New("doctor found problems")
	}
	return nil
}
