// Package service wires the BPC job service from its configuration: the
// Postgres pool, the River client with the workers and their middleware,
// leases and the reaper, the admin API and River UI, metrics, and the HTTP
// server. internal/cli parses the command line and calls it; tests start the
// whole service in-process through it.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/riverqueue/river"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"riverqueue.com/riverui"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/http/access"
	"github.com/bpc-platform/bpc/internal/http/api"
	"github.com/bpc-platform/bpc/internal/http/public"
	"github.com/bpc-platform/bpc/internal/jobrun"
	"github.com/bpc-platform/bpc/internal/jobrun/trigger"
	"github.com/bpc-platform/bpc/internal/tracing"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/migrations"
	"github.com/bpc-platform/bpc/passport"
	bpcriverui "github.com/bpc-platform/bpc/riverui"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

// keysFlushInterval is how often API keys' last-used times are written.
const keysFlushInterval = 10 * time.Second

// Roles of `bpc serve`.
const (
	RoleAll    = "all"
	RoleWorker = "worker"
	RoleAPI    = "api"
)

// App is one running service: the River client (working jobs unless the
// role is api), the admin API and River UI (unless the role is worker).
type App struct {
	cfg    Config
	role   string
	logger *slog.Logger
	pool   *pgxpool.Pool
	store  *store.Queries
	// reads are the read-routed Queries of the public routes and the
	// operators' list routes: over router when BPC_DATABASE_READ_URL is
	// set (API roles), else store itself.
	reads *store.Queries
	// router sends reads to the replica pool while it is healthy; nil
	// without a replica. stopRouter ends its monitor.
	router     *store.ReadRouter
	replica    *pgxpool.Pool
	stopRouter context.CancelFunc
	routerDone chan struct{}
	river      *river.Client[pgx.Tx]
	riverUI    *riverui.Handler
	leases     *jobrun.Leases
	reaper     *jobrun.Reaper
	// keys resolves tenant API keys (API roles); stopKeys ends its
	// last-used flusher after a final flush.
	keys     *access.Keyring
	stopKeys context.CancelFunc
	keysDone chan struct{}
	// trigger is the RabbitMQ job trigger (BPC_QUEUE_ENABLED); stopTrigger
	// ends its connection.
	trigger     *trigger.Trigger
	stopTrigger context.CancelFunc
	triggerDone chan struct{}
	// stopReaper ends the lease reaper (worker roles).
	stopReaper context.CancelFunc
	reaperDone chan struct{}
	// tracer exports the service's spans; nil when tracing is off.
	tracer   *sdktrace.TracerProvider
	registry *prometheus.Registry
	metrics  *workers.Metrics
	handler  http.Handler
	server   *http.Server
	addr     string
	// answers caches the public routes' answers (API roles, unless
	// BPC_PUBLIC_CACHE_MB=0); stopAnswers ends its LISTEN loop.
	answers     *public.Answers
	stopAnswers context.CancelFunc
	answersDone chan struct{}
	// publicBase is the base of the QR codes' links: the configured one,
	// or, for port 0, the address the server listens on once it does.
	publicBase atomic.Pointer[string]
	// riverRunning is true between a successful River start and its stop.
	riverRunning atomic.Bool
	serveErr     chan error
	stopOnce     sync.Once

	schemaMu      sync.Mutex
	schemaChecked time.Time
	schemaErr     error
}

// NewPool connects to Postgres. Every connection carries bpc.lease_seconds,
// which the SSOT mirror uses to set lease_expires_at.
func NewPool(ctx context.Context, cfg Config) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, configError(errcode.Validation, "DATABASE_URL", "is not a valid Postgres URL")
	}
	if pc.ConnConfig.RuntimeParams == nil {
		pc.ConnConfig.RuntimeParams = map[string]string{}
	}
	pc.ConnConfig.RuntimeParams["application_name"] = "bpc"
	pc.ConnConfig.RuntimeParams["bpc.lease_seconds"] = strconv.Itoa(cfg.LeaseSeconds)
	if !strings.Contains(cfg.DatabaseURL, "pool_max_conns") {
		// River's producers, notifier and maintenance share the pool with the API.
		pc.MaxConns = int32(max(20, min(cfg.WorkerConcurrency+10, 100)))
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("error creating database pool: %w", err)
	}
	return pool, nil
}

// NewReadPool opens the pool of the read replica (BPC_DATABASE_READ_URL).
// Like pgxpool's, it connects on first use: a replica that is down when the
// service starts only sends reads to the primary.
func NewReadPool(ctx context.Context, cfg Config) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig(cfg.DatabaseReadURL)
	if err != nil {
		return nil, configError(errcode.Validation, "BPC_DATABASE_READ_URL", "is not a valid Postgres URL")
	}
	if pc.ConnConfig.RuntimeParams == nil {
		pc.ConnConfig.RuntimeParams = map[string]string{}
	}
	// Named apart from the primary's, so pg_stat_activity on the replica
	// shows which connections are the service's reads.
	pc.ConnConfig.RuntimeParams["application_name"] = "bpc-read"
	if !strings.Contains(cfg.DatabaseReadURL, "pool_max_conns") {
		pc.MaxConns = 20
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("error creating read replica pool: %w", err)
	}
	return pool, nil
}

// New wires the service for role without starting anything.
func New(cfg Config, role string, logger *slog.Logger, pool *pgxpool.Pool) (_ *App, err error) {
	a := &App{cfg: cfg, role: role, logger: logger, pool: pool, store: store.New(pool), serveErr: make(chan error, 1)}
	a.reads = a.store
	if base := cfg.PublicBaseURL; base != "" {
		a.publicBase.Store(&base)
	}
	a.registry = prometheus.NewRegistry()
	a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a.registry.MustRegister(api.NewQueueCollector(pool, logger, append(slices.Clone(jobargs.Queues), jobrun.QueueMaintenance)...), jobrun.NewBreakerCollector(a.store, logger))
	a.metrics = workers.NewMetrics(a.registry)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if cfg.DatabaseReadURL != "" && role != RoleWorker {
		// Only the API serves the routes that read from the replica.
		if a.replica, err = NewReadPool(ctx, cfg); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				a.replica.Close()
			}
		}()
		a.router = store.NewReadRouter(pool, a.replica, store.ReadRouterOptions{
			MaxLag: cfg.ReadMaxLag, CheckInterval: cfg.ReadCheckInterval, Logger: logger})
		a.reads = store.New(a.router)
		a.registry.MustRegister(newReadCollector(a.router))
		logger.Info("read replica configured: public and list reads use it while it is within the lag bound",
			slog.Duration("max_lag", cfg.ReadMaxLag))
	}
	signer, err := passport.LoadSigner(ctx, a.store, cfg.Env, cfg.SigningKeyID, cfg.SigningKeyBase64)
	if err != nil {
		return nil, err
	}
	if signer.Source != "" {
		logger.Info("platform legacy signing key loaded: it signs only versions compiled under its id before tenants had keys",
			slog.String("key_id", signer.KeyID), slog.String("source", signer.Source),
			slog.String("public_key_base64", signer.PublicKeyBase64()))
	}
	keys, kekSource, err := cfg.keyring(signer)
	if err != nil {
		return nil, err
	}
	logger.Info("tenant signing keys encrypted under the key encryption key", slog.String("source", kekSource))
	if kekSource == "test-fixed" {
		logger.Warn("BPC_KEY_ENCRYPTION_KEY is unset in test: the fixed, public test key encrypts the signing keys")
	}

	switch state, err := passport.SettleDevTenant(ctx, a.store, cfg.Env); {
	case err != nil:
		return nil, err
	case state == passport.DevTenantInUse:
		logger.Warn("the dev tenant holds data in prod and is kept; move or delete its data, and the service removes it at its next start",
			slog.String("tenant_id", store.DevTenantID.String()))
	}

	if cfg.Env == "prod" && cfg.WebhookAllowPrivate {
		logger.Warn("BPC_WEBHOOK_ALLOW_PRIVATE=true in prod: tenants' webhooks may reach loopback and private addresses")
	}

	a.leases = &jobrun.Leases{Store: a.store, Logger: logger, Owner: cfg.WorkerID,
		TTL: time.Duration(cfg.LeaseSeconds) * time.Second, Renew: time.Duration(cfg.LeaseRenewSeconds) * time.Second}
	a.reaper = &jobrun.Reaper{Store: a.store, Logger: logger, Metrics: a.metrics, Interval: cfg.ReaperInterval,
		MaxLeaseExpiries: cfg.MaxLeaseExpiries}

	// Tracing off leaves the tracing out altogether: no middleware, no
	// wrapped transport, no span in any context.
	if cfg.Tracing.Enabled() {
		tracing.LogErrors(logger)
	}
	a.tracer, err = tracing.NewProvider(ctx, cfg.Tracing)
	if err != nil {
		return nil, err
	}
	var jobTracing *jobrun.Tracing
	var httpTracer trace.Tracer
	webhookClient := workers.NewWebhookHTTPClient(cfg.WebhookDestinations(), cfg.WebhookTimeouts())
	if a.tracer != nil {
		defer func() {
			if err != nil {
				_ = a.tracer.Shutdown(context.Background())
			}
		}()
		jobTracing = jobrun.NewTracing(a.tracer)
		httpTracer = a.tracer.Tracer("github.com/bpc-platform/bpc/internal/http/api")
		// Around the policy's transport, which still dials every connection.
		webhookClient.Transport = workers.TraceTransport(webhookClient.Transport, a.tracer)
		logger.Info("tracing on", slog.Any("exporters", cfg.Tracing.Exporters))
	}

	// The trigger's publisher hears of every committed insert; in a
	// poll-only worker its listener stands in for LISTEN.
	var publisher passport.Publisher
	var listener *trigger.Listener
	if cfg.QueueEnabled {
		tc := cfg.Queue
		tc.Consume = role != RoleAPI && !cfg.DBListen
		a.trigger = trigger.New(tc, logger, a.registry)
		publisher = a.trigger
		if tc.Consume {
			listener = trigger.NewListener(a.trigger, a.store, logger)
			listener.MinWakeInterval = cfg.QueueWakeInterval
		}
	}
	if !cfg.DBListen && role != RoleAPI {
		if listener != nil {
			logger.Info("River runs without LISTEN (BPC_DB_LISTEN=false); the RabbitMQ trigger wakes it, polling is the backstop")
		} else {
			logger.Info("River runs poll-only (BPC_DB_LISTEN=false): a job waits up to BPC_JOBS_POLL_INTERVAL_MS",
				slog.Duration("poll_interval", cfg.PollInterval))
		}
	}

	riverWorkers := river.NewWorkers()
	workers.Register(riverWorkers, workers.Deps{
		Store: a.store, Logger: logger, Metrics: a.metrics,
		HTTPClient: webhookClient, WebhookTimeout: cfg.WebhookTimeout,
		CompilerBuildID: cfg.CompilerBuildID,
		Limits:          cfg.CompileLimits(),
		Keys:            keys,
		ExportDir:       cfg.ExportDir,
		UploadsDir:      cfg.UploadsDir,
		BeforeCommit:    cfg.BeforeCommit,
		WebhookBreaker:  cfg.Breaker,
		Publisher:       publisher,
		PublicBaseURL:   a.PublicBaseURL,
	})
	jobrun.RegisterMaintenance(riverWorkers, jobrun.MaintenanceDeps{Store: a.store, Logger: logger,
		Metrics: jobrun.NewMaintenanceMetrics(a.registry), Config: cfg.Maintenance})
	observer := &jobrun.Observer{Logger: logger, Metrics: a.metrics, Leases: a.leases}
	if role != RoleAPI {
		observer.Prime()
	}
	a.river, err = jobrun.NewClient(pool, jobrun.ClientOptions{
		ID:                    cfg.WorkerID,
		Logger:                logger,
		Work:                  role != RoleAPI,
		Concurrency:           cfg.WorkerConcurrency,
		PollInterval:          cfg.PollInterval,
		FetchCooldown:         cfg.FetchCooldown,
		PipelineFetchCooldown: cfg.PipelineCooldown,
		PipelinePollInterval:  cfg.PipelinePoll,
		BackoffUnit:           cfg.BackoffUnit,
		MaxAttempts:           cfg.MaxAttemptsDefault,
		Workers:               riverWorkers,
		Observer:              observer,
		Tracing:               jobTracing,
		RescueStuckJobsAfter:  cfg.rescueAfter(),
		Maintenance:           &cfg.Maintenance,
		PollOnly:              !cfg.DBListen,
		Listener:              listener,
		TenantCaps:            map[string]int{jobargs.QueueWebhooks: cfg.WebhookTenantConcurrency},
		RiverFetch:            cfg.RiverFetch,
	})
	if err != nil {
		return nil, err
	}

	srv := &api.Server{
		Config: api.Config{
			Env:           cfg.Env,
			AdminToken:    cfg.AdminToken,
			MaxBodyBytes:  cfg.HTTPMaxBodyBytes,
			Kinds:         workers.Kinds(),
			CompileLimits: cfg.CompileLimits(),
			MaxQueueDepth: cfg.QueueMaxDepth,
			Quotas:        cfg.Quotas,

			WebhookDestinations: cfg.WebhookDestinations(),
		},
		Store:    a.store,
		Reads:    a.reads,
		River:    a.river,
		Inserter: passport.Publishing(a.river, publisher),
		Logger:   logger,
		Metrics:  api.NewMetrics(a.registry),
		Limits:   access.NewLimiter(float64(cfg.RateLimitRPS), cfg.RateLimitBurst),
		Access:   api.NewAccessMetrics(a.registry),
		Gatherer: a.registry,
		Ready:    a.readyChecks(),
		Admin:    role != RoleWorker,
		Tracer:   httpTracer,

		PublicBaseURL: a.PublicBaseURL,

		SigningKeys: keys,
	}
	if role != RoleWorker {
		if cfg.PublicCache.MaxBytes > 0 {
			pc := cfg.PublicCache
			if cfg.DatabaseReadURL != "" {
				// After a change, read from the primary for longer than
				// a replica the router still calls healthy may lag it:
				// a refill from the replica then has the change.
				pc.PrimaryWindow = max(public.DefaultPrimaryWindow, cfg.ReadMaxLag+2*cfg.ReadCheckInterval+10*time.Second)
			}
			a.answers = public.NewAnswers(pc)
		}
		srv.PublicAnswers, srv.PublicCDNMaxAge = a.answers, cfg.PublicCDNMaxAge
		a.keys = access.NewKeyring(a.store)
		srv.Keys = a.keys
		// A tenant's budget is the environment's unless the platform set
		// its rate_limit_rps or rate_limit_burst quota.
		srv.TenantLimits = access.NewTenantLimiter(cfg.TenantRateLimit, func(ctx context.Context, tenantID uuid.UUID) (access.Budget, error) {
			o, err := passport.TenantOverrides(ctx, a.store, tenantID)
			if err != nil {
				return access.Budget{}, err
			}
			b := cfg.TenantRateLimit
			if o.RateLimitRPS != nil {
				b.RPS = float64(*o.RateLimitRPS)
			}
			if o.RateLimitBurst != nil {
				b.Burst = *o.RateLimitBurst
			}
			return b, nil
		})
		a.riverUI, err = bpcriverui.NewHandler(a.river, logger)
		if err != nil {
			return nil, err
		}
		srv.RiverUI = a.riverUI
	}
	a.handler = srv.Handler()
	return a, nil
}

func (a *App) readyChecks() []api.ReadyCheck {
	checks := []api.ReadyCheck{
		{Name: "database", Check: func(ctx context.Context) error { return a.pool.Ping(ctx) }},
		{Name: "schema", Check: a.schemaCurrent},
	}
	if a.role != RoleAPI {
		checks = append(checks, api.ReadyCheck{Name: "river", Check: func(context.Context) error {
			if !a.riverRunning.Load() {
				return errors.New("River client is not running")
			}
			return nil
		}})
	}
	if a.router != nil {
		// Optional: without the replica, reads go to the primary.
		checks = append(checks, api.ReadyCheck{Name: "read_replica", Check: a.replicaCheck, Degrades: true})
	}
	if a.trigger != nil {
		checks = append(checks, api.ReadyCheck{Name: "queue", Check: a.trigger.Check, Degrades: !a.cfg.HealthRequireQueue})
	}
	return checks
}

// replicaCheck reports the read replica as its monitor last found it,
// without a query of its own.
func (a *App) replicaCheck(context.Context) error {
	if target, reason := a.router.Route(); target != store.TargetReplica {
		return fmt.Errorf("reads go to the primary: %s (lag %s)", reason, a.router.Lag().Round(time.Millisecond))
	}
	return nil
}

// schemaCurrent checks migrations at most every 10 s.
func (a *App) schemaCurrent(ctx context.Context) error {
	a.schemaMu.Lock()
	defer a.schemaMu.Unlock()
	if time.Since(a.schemaChecked) < 10*time.Second {
		return a.schemaErr
	}
	st, err := migrations.Check(ctx, a.pool)
	switch {
	case err != nil:
		return err // not cached: the database may be back on the next probe
	case !st.Current():
		a.schemaErr = errors.New(st.String())
	default:
		a.schemaErr = nil
	}
	a.schemaChecked = time.Now()
	return a.schemaErr
}

// Start starts River (unless api role), River UI's services and the HTTP
// server. It listens first: a port the system picks is then known before
// any job renders a QR code linking to it.
func (a *App) Start(ctx context.Context) (err error) {
	ln, err := net.Listen("tcp", a.cfg.HTTPAddr)
	if err != nil {
		return configError(errcode.Validation, "BPC_HTTP_ADDR", "cannot listen on %s: %s", a.cfg.HTTPAddr, err.Error())
	}
	defer func() {
		if err != nil {
			_ = ln.Close()
		}
	}()
	a.addr = ln.Addr().String()
	if a.cfg.PublicBaseURL == "" {
		base, berr := ListenBaseURL(a.addr)
		if berr != nil || base == "" {
			return configError(errcode.Validation, "BPC_PUBLIC_BASE_URL", "is not set and the listen address %s gives none: set it", a.addr)
		}
		a.publicBase.Store(&base)
	}
	if a.trigger != nil {
		triggerCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		a.stopTrigger, a.triggerDone = cancel, make(chan struct{})
		go func() {
			defer close(a.triggerDone)
			a.trigger.Run(triggerCtx)
		}()
	}
	if a.role != RoleAPI {
		// Not the caller's (signal) context: cancelling River's start
		// context cancels running jobs at once, and a shutdown must first
		// let them finish (stop below).
		if err := a.river.Start(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("error starting River: %w", err)
		}
		a.riverRunning.Store(true)
		go func() {
			<-a.river.Stopped()
			a.riverRunning.Store(false)
		}()
		reaperCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		a.stopReaper, a.reaperDone = cancel, make(chan struct{})
		go func() {
			defer close(a.reaperDone)
			var wg sync.WaitGroup
			wg.Go(func() { a.leases.Run(reaperCtx) })
			a.reaper.Run(reaperCtx)
			wg.Wait()
		}()
	}
	if a.answers != nil && a.cfg.DBListen {
		// Every process's changes reach this one's cached answers.
		answersCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		a.stopAnswers, a.answersDone = cancel, make(chan struct{})
		go func() {
			defer close(a.answersDone)
			a.answers.Listen(answersCtx, a.pool, a.logger)
		}()
	}
	if a.router != nil {
		routerCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		a.stopRouter, a.routerDone = cancel, make(chan struct{})
		go func() {
			defer close(a.routerDone)
			a.router.Run(routerCtx)
		}()
	}
	if a.keys != nil {
		keysCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		a.stopKeys, a.keysDone = cancel, make(chan struct{})
		go func() {
			defer close(a.keysDone)
			a.keys.Run(keysCtx, keysFlushInterval, a.logger)
		}()
	}
	if a.riverUI != nil {
		if err := a.riverUI.Start(ctx); err != nil {
			return fmt.Errorf("error starting River UI: %w", err)
		}
	}
	a.server = &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		// Long enough for the waitMs long-poll (≤ 30 s).
		WriteTimeout: 45 * time.Second,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(a.logger.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := a.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.serveErr <- err
		}
	}()
	return nil
}

// Stop shuts down in order: stop taking requests, let running jobs finish
// within the shutdown timeout (then cancel them), stop River UI.
func (a *App) Stop(ctx context.Context) {
	a.stopOnce.Do(func() {
		if a.server != nil {
			httpCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := a.server.Shutdown(httpCtx); err != nil {
				a.logger.Warn("HTTP shutdown incomplete", slog.String("error", err.Error()))
			}
			cancel()
		}
		if a.role != RoleAPI && a.riverRunning.Load() {
			// Stop fetching and let running jobs finish; past the timeout,
			// cancel them: the observer snoozes a job cancelled by shutdown
			// back to the queue without spending an attempt.
			a.leases.BeginShutdown()
			softCtx, cancel := context.WithTimeout(ctx, a.cfg.ShutdownTimeout)
			err := a.river.Stop(softCtx)
			cancel()
			if err != nil {
				a.logger.Warn("jobs still running after the shutdown timeout; cancelling them", slog.String("error", err.Error()))
				hardCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
				if err := a.river.StopAndCancel(hardCtx); err != nil {
					a.logger.Error("River did not stop", slog.String("error", err.Error()))
				}
				cancel()
			}
		}
		if a.stopReaper != nil {
			a.stopReaper()
			<-a.reaperDone
		}
		if a.stopAnswers != nil {
			a.stopAnswers()
			<-a.answersDone
		}
		if a.stopKeys != nil {
			a.stopKeys() // Run flushes the last-used times once more
			<-a.keysDone
		}
		if a.stopRouter != nil {
			a.stopRouter()
			<-a.routerDone
		}
		if a.replica != nil {
			a.replica.Close()
		}
		if a.stopTrigger != nil {
			a.stopTrigger()
			// Its socket is closed with its context, so it ends at once; a
			// bound all the same, so that no broker can hold a shutdown.
			select {
			case <-a.triggerDone:
			case <-time.After(5 * time.Second):
				a.logger.Warn("queue trigger did not stop within 5 s; leaving it")
			}
		}
		if a.tracer != nil {
			// Last: the spans of the requests and jobs that just ended.
			flushCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := a.tracer.Shutdown(flushCtx); err != nil {
				a.logger.Warn("spans not exported at shutdown", slog.String("error", err.Error()))
			}
			cancel()
		}
	})
}

// PublicBaseURL is the base of the BPC-QR-2 links the workers render
// (Config.PublicBaseURL, or the address the server listens on when that
// is left to the system); empty before it is known.
func (a *App) PublicBaseURL() string {
	if p := a.publicBase.Load(); p != nil {
		return *p
	}
	return ""
}

// PublicAnswers is the public routes' cache of answers; nil for a worker
// or with BPC_PUBLIC_CACHE_MB=0.
func (a *App) PublicAnswers() *public.Answers { return a.answers }

// Addr is the address the HTTP server listens on, once started.
func (a *App) Addr() string { return a.addr }

// ServeErr receives the HTTP server's error if it stops on its own.
func (a *App) ServeErr() <-chan error { return a.serveErr }

// River is the service's River client.
func (a *App) River() *river.Client[pgx.Tx] { return a.river }

// Config is the configuration the service was made with.
func (a *App) Config() Config { return a.cfg }

// ReadRouter routes the public and list reads to the read replica; nil
// without BPC_DATABASE_READ_URL (or in the worker role).
func (a *App) ReadRouter() *store.ReadRouter { return a.router }

// Trigger is the RabbitMQ job trigger, nil unless BPC_QUEUE_ENABLED.
func (a *App) Trigger() *trigger.Trigger { return a.trigger }

// Metrics are the job metrics the service records.
func (a *App) Metrics() *workers.Metrics { return a.metrics }
