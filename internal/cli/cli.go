// Package cli is the bpc command line: Run parses a subcommand's flags and
// environment and calls the package that does the work (service, tick,
// doctor, demo, core/verify). cmd/bpc's main only wires the process to it,
// and the end-to-end tests start the whole service through it in-process.
package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bpc-platform/bpc/internal/doctor"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/migrations"
)

// A command is one subcommand of bpc: its synopsis and description (its
// part of the usage and the head of its --help) and what runs it.
type command struct {
	name     string
	synopsis string
	about    string
	run      func(ctx context.Context, args []string, e env) error
}

// env is what a subcommand reads and writes: the process's environment and
// output in main, a test's own in tests.
type env struct {
	getenv         func(string) string
	stdout, stderr io.Writer
}

// commands are bpc's subcommands in the order the usage lists them (set
// in init: their run functions look their help up here).
var commands []command

func init() {
	commands = []command{
		{"serve", "bpc serve [--role=all|worker|api] [--migrate]", `Run the service. all: workers + admin API + River UI (default);
worker: work jobs (serves health and metrics only); api: admin API
and River UI without working jobs. Refuses a schema that is behind
unless --migrate is given.`, cmdServe},
		{"migrate", "bpc migrate", `Apply River's and the service's migrations, then exit.`, cmdMigrate},
		{"tick", "bpc tick [--max-duration 60s] [--max-jobs 1000] [--maintenance=true]", `For cron-style deployments: work the jobs due now (as the worker
role would) and exit once none is left, --max-jobs attempts were
worked or --max-duration passed; running jobs then get
BPC_WORKER_SHUTDOWN_TIMEOUT_MS to finish. Jobs scheduled later
(retries in backoff) wait for the next tick. --maintenance also runs
the maintenance jobs due in their interval. Prints a one-line
summary; exits non-zero only on errors.`, cmdTick},
		{"doctor", "bpc doctor [--json]", `Compare River's jobs with the SSOT jobs table, verify every tenant's
audit chain and the schema; exit 1 on any problem. Without
DATABASE_URL (and BPC_ENV unset or dev) it finds the dev database as
scripts/pg.sh does: 127.0.0.1:5432 as user postgres, else this
checkout's private cluster in .pgdata/; database bpc.`, cmdDoctor},
		{"webhook-echo", "bpc webhook-echo --secret S [--addr 127.0.0.1:9999] [--fail]", `A webhook receiver for trying things out: verifies X-BPC-Signature
and prints each delivery; --fail answers 500. A GET or HEAD (a
readiness probe) is answered 200.`, cmdWebhookEcho},
		{"demo", "bpc demo [--url http://127.0.0.1:8080] [--out demo-out] [--tenant ID]", `Walk the NMC811 sample battery through the whole pipeline over the
HTTP API of a running service (BPC_URL, BPC_ADMIN_TOKEN,
BPC_DEMO_TENANT, BPC_DEMO_OUT), write the artifacts to the output
directory and verify them offline.`, cmdDemo},
		{"verify", "bpc verify [--keys FILE] PATH", `Verify an export file (BPC-EXPORT-1) or an artifact directory such as
demo-out/ offline, one line per check: exit 0 verified, 1 not, 2 usage.
--keys FILE pins the key to a saved issuer key directory and checks the
key's owner, its revocation and the issuer: 3 when only the issuer's
identity is not verified (amber).`, cmdVerify},
		{"version", "bpc version", `Print the version, the Go version, the commit the binary was built
from (and whether the tree was dirty) and the schema it expects.`, cmdVersion},
	}
	usage = usageText()
}

// usage lists the subcommands (bpc help, bpc --help).
var usage string

func usageText() string {
	var b strings.Builder
	b.WriteString("bpc — Battery Passport Compiler job service\n\nUsage:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %s\n%s\n", c.synopsis, indent(c.about, "        "))
	}
	b.WriteString("\n`bpc help SUBCOMMAND` or `bpc SUBCOMMAND --help` shows a subcommand's flags.\n")
	b.WriteString("Configuration is read from the environment; see README.md.\n")
	return b.String()
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// Run executes the subcommand args[0] with the rest of args as its flags,
// reading its configuration through getenv and writing to stdout and
// stderr; main passes the process's own, tests their own. The error, if
// any, is for main to print (redacted) and to turn into the exit status
// with ExitCode.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := env{getenv: getenv, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &exitError{2, errors.New("a subcommand is required")}
	}
	switch args[0] {
	case "help", "-h", "--help", "-help":
		if len(args) > 1 {
			if c, ok := lookup(args[1]); ok {
				return c.run(ctx, []string{"--help"}, e)
			}
			fmt.Fprint(stderr, usage)
			return &exitError{2, fmt.Errorf("unknown subcommand %q", args[1])}
		}
		fmt.Fprint(stdout, usage)
		return nil
	case "--version", "-version":
		return cmdVersion(ctx, args[1:], e)
	}
	c, ok := lookup(args[0])
	if !ok {
		fmt.Fprint(stderr, usage)
		return &exitError{2, fmt.Errorf("unknown subcommand %q", args[0])}
	}
	return c.run(ctx, args[1:], e)
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// flags is the flag set of subcommand name, whose --help and -h print the
// subcommand's help to stdout.
func flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// Parse's own messages are discarded: parse returns them as the error,
	// which main prints once.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses args into fs. help is true when args asked for help
// (-h, --help), which parse has printed to e.stdout: the caller returns
// at once, having done nothing. A wrong flag is a usage error (status 2)
// that says where the help is.
func parse(fs *flag.FlagSet, args []string, e env) (help bool, err error) {
	err = fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		c, _ := lookup(fs.Name())
		fmt.Fprintf(e.stdout, "Usage:\n  %s\n\n%s\n", c.synopsis, indent(c.about, "  "))
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(e.stdout, "\nFlags:")
			fs.SetOutput(e.stdout)
			fs.PrintDefaults()
			fs.SetOutput(io.Discard)
		}
		return true, nil
	}
	if err != nil {
		return false, &exitError{2, fmt.Errorf("%s: %w (see bpc %s --help)", fs.Name(), err, fs.Name())}
	}
	return false, nil
}

// noArgs refuses positional arguments of a subcommand that takes none.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return &exitError{2, fmt.Errorf("%s: unexpected argument %q (see bpc %s --help)", fs.Name(), fs.Arg(0), fs.Name())}
	}
	return nil
}

func cmdServe(ctx context.Context, args []string, e env) error {
	fs := flags("serve")
	role := fs.String("role", service.RoleAll, "all, worker or api")
	migrate := fs.Bool("migrate", false, "apply pending migrations before starting")
	if help, err := parse(fs, args, e); help || err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	getenv, stdout, stderr := e.getenv, e.stdout, e.stderr
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

// printBanner says where things are; every URL it prints answers (the
// index at /v1 links them all).
func printBanner(w io.Writer, cfg service.Config, addr, role string) {
	base := "http://" + displayAddr(addr)
	fmt.Fprintf(w, "\nBPC job service (%s, role %s) listening on %s\n", cfg.Env, role, addr)
	if role != service.RoleWorker {
		fmt.Fprintf(w, "  Admin API:  %s/v1   (an index of links; requests need Authorization: Bearer <token>)\n", base)
		fmt.Fprintf(w, "  API docs:   %s/v1/docs\n", base)
		fmt.Fprintf(w, "  OpenAPI:    %s/v1/openapi.json\n", base)
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

// devSearch is where bpc doctor looks for the dev database without
// DATABASE_URL (tests point it elsewhere).
var devSearch = doctor.DefaultDevSearch

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

func cmdMigrate(ctx context.Context, args []string, e env) error {
	fs := flags("migrate")
	if help, err := parse(fs, args, e); help || err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	getenv, stdout := e.getenv, e.stdout
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

func cmdDoctor(ctx context.Context, args []string, e env) error {
	fs := flags("doctor")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if help, err := parse(fs, args, e); help || err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	getenv, stdout := e.getenv, e.stdout
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	// A production run signs with per-tenant keys and prints links: without
	// BPC_KEY_ENCRYPTION_KEY or BPC_PUBLIC_BASE_URL it must not start.
	if err := service.CheckSigningConfig(getenv); err != nil {
		return err
	}
	if strings.TrimSpace(getenv("DATABASE_URL")) == "" && cmp.Or(getenv("BPC_ENV"), "dev") == "dev" {
		// As `make doctor` (scripts/pg.sh) would, without starting anything.
		url, how, err := doctor.FindDevDatabase(ctx, devSearch())
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "doctor: DATABASE_URL is not set; using the dev database: %s\n", how)
		getenv = func(k string) string {
			if k == "DATABASE_URL" {
				return url
			}
			return e.getenv(k)
		}
	}
	cfg, pool, err := connect(ctx, getenv, service.ToolConfig)
	if err != nil {
		return err
	}
	defer pool.Close()

	rep, err := doctor.Check(ctx, pool)
	if err != nil {
		return err
	}
	if cfg.DatabaseReadURL != "" {
		replica, err := service.NewReadPool(ctx, cfg)
		if err != nil {
			return err
		}
		defer replica.Close()
		rr, err := doctor.CheckReplica(ctx, pool, replica)
		if err != nil {
			return err
		}
		rep.AddReplica(rr)
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
