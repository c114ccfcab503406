package jobrun

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/bpc-platform/bpc/internal/jobrun/fairfetch"
	"github.com/bpc-platform/bpc/internal/jobrun/trigger"
	"github.com/bpc-platform/bpc/jobargs"
)

// ClientOptions configures the service's River client.
type ClientOptions struct {
	// ID names this worker process; it becomes the SSOT lease_owner.
	ID     string
	Logger *slog.Logger
	// Work makes the client fetch and work jobs; false gives an insert-only
	// client (the API role).
	Work bool
	// Concurrency is the number of workers per queue.
	Concurrency  int
	PollInterval time.Duration
	// FetchCooldown is the least time between two fetches of a queue, and
	// the window in which River sends at most one insert notification per
	// queue; it bounds how fast a job inserted by another job is picked up.
	// Zero means min(PollInterval, 100 ms), River's default.
	FetchCooldown time.Duration
	// PipelineFetchCooldown, when shorter than FetchCooldown, is the
	// pipeline queue's: each step of a passport's pipeline inserts the next
	// on that queue, so its cooldown is paid once per step. River sends
	// insert notifications by one window for all queues, the shortest
	// cooldown, so that a pipeline step's notification is not dropped for
	// the other queues' sake; the other queues still fetch at most once
	// per FetchCooldown.
	PipelineFetchCooldown time.Duration
	// PipelinePollInterval, when shorter than PollInterval, polls the
	// pipeline queue more often: a backstop for the insert notifications
	// River's limiter drops (at most one per queue per FetchCooldown), which
	// would otherwise leave a next step waiting a whole PollInterval.
	PipelinePollInterval time.Duration
	// RescueStuckJobsAfter configures River's rescuer (zero: River's
	// default, an hour). The lease reaper returns crashed workers' jobs
	// long before; the rescuer is the backstop behind it.
	RescueStuckJobsAfter time.Duration
	BackoffUnit          time.Duration
	MaxAttempts          int
	// Workers are the registered workers (required when Work is true).
	Workers *river.Workers
	// Observer is the job middleware (required when Work is true).
	Observer *Observer
	// Tracing, when set, traces inserts and job attempts (tracing off: nil,
	// and River runs without it).
	Tracing *Tracing
	// Maintenance, when set, adds the maintenance queue and its periodic
	// jobs (run by River's elected leader only) and sets River's job
	// cleaner to its River retention.
	Maintenance *MaintenanceConfig
	// ExtraQueues adds queues beyond jobargs.Queues (benchmarks).
	ExtraQueues []string
	// ExtraQueuePollInterval, when positive, is the poll interval of the
	// ExtraQueues instead of PollInterval (benchmarks: the benchmark's
	// queue polls as River's benchmark does, the service's own queues at
	// the service's interval).
	ExtraQueuePollInterval time.Duration
	// PollOnly runs River without LISTEN (BPC_DB_LISTEN=false): producers
	// find jobs by polling, unless Listener is set.
	PollOnly bool
	// Listener, with PollOnly, stands in for LISTEN: the RabbitMQ
	// trigger's (trigger.NewListener).
	Listener *trigger.Listener
	// TenantCaps maps a queue to the most jobs of one tenant running in it
	// at once, across every process (BPC_WEBHOOK_TENANT_CONCURRENCY for
	// the webhooks queue); a queue not in it has no cap.
	TenantCaps map[string]int
	// RiverFetch fetches with River's own statement, first come first
	// served across tenants, instead of fairfetch's round-robin: the
	// benchmarks' "before".
	RiverFetch bool
}

// NewClient builds the River client with the service's configuration.
func NewClient(pool *pgxpool.Pool, o ClientOptions) (*river.Client[pgx.Tx], error) {
	cfg := riverConfig(o)
	var driver riverdriver.Driver[pgx.Tx] = riverpgxv5.New(pool)
	switch {
	case o.PollOnly && o.Listener != nil && o.Work:
		driver = trigger.NewDriver(pool, o.Listener)
		// The listener spaces each queue's wake-ups as River spaces its fetches.
		cooldowns := map[string]time.Duration{}
		for name, q := range cfg.Queues {
			cooldowns[name] = q.FetchCooldown
		}
		o.Listener.UseCooldowns(cfg.FetchCooldown, cooldowns)
	case o.PollOnly:
		cfg.PollOnly = true
	}
	// Every working client fetches fairly, whichever driver it runs on
	// (the trigger's too): an insert-only client fetches nothing.
	if o.Work && !o.RiverFetch {
		driver = fairfetch.Wrap(driver, pool, o.TenantCaps)
	}
	client, err := river.NewClient(driver, cfg)
	if err != nil {
		return nil, fmt.Errorf("error creating River client: %w", err)
	}
	return client, nil
}

// CappedQueuePollInterval is how often a queue with a per-tenant cap
// polls. River fetches again as soon as a job ends only when its last fetch
// came back full; a fetch that a tenant's cap cut short (its other jobs
// wait while it holds the cap) looks to River like an empty queue, and the
// tenant's next job would wait for an insert or the poll: at the default
// 1 s poll, a capped tenant with a backlog for a fast receiver would run
// about cap jobs a second instead of cap at a time.
const CappedQueuePollInterval = 100 * time.Millisecond

// riverConfig is the River configuration of NewClient's client.
func riverConfig(o ClientOptions) *river.Config {
	cfg := &river.Config{
		ID:                o.ID,
		Logger:            o.Logger,
		MaxAttempts:       o.MaxAttempts,
		RetryPolicy:       &RetryPolicy{Unit: o.BackoffUnit},
		FetchPollInterval: o.PollInterval,
		FetchCooldown:     min(o.PollInterval, 100*time.Millisecond),
		// River's rescuer judges a job stuck by when its attempt started,
		// so it cannot tell a long job from a dead one; the service's lease
		// reaper does that, and the rescuer stays far behind it.
		RescueStuckJobsAfter: o.RescueStuckJobsAfter,
	}
	if o.FetchCooldown > 0 {
		cfg.FetchCooldown = min(o.PollInterval, o.FetchCooldown)
	}
	// River's client-wide cooldown is the window of its insert
	// notifications and the default of every queue; each queue below sets
	// its own.
	cooldown, pipelineCooldown := cfg.FetchCooldown, cfg.FetchCooldown
	if o.PipelineFetchCooldown > 0 && o.PipelineFetchCooldown < cooldown {
		pipelineCooldown = o.PipelineFetchCooldown
		cfg.FetchCooldown = pipelineCooldown
	}
	if o.Work {
		cfg.Queues = map[string]river.QueueConfig{}
		for _, q := range append(append([]string{}, jobargs.Queues...), o.ExtraQueues...) {
			qc := river.QueueConfig{MaxWorkers: o.Concurrency, FetchCooldown: cooldown}
			if q == jobargs.QueuePipeline {
				qc.FetchCooldown = pipelineCooldown
				if o.PipelinePollInterval > 0 && o.PipelinePollInterval < o.PollInterval {
					qc.FetchPollInterval = max(o.PipelinePollInterval, pipelineCooldown)
				}
			}
			if o.ExtraQueuePollInterval > 0 && slices.Contains(o.ExtraQueues, q) {
				qc.FetchPollInterval = max(o.ExtraQueuePollInterval, qc.FetchCooldown)
			}
			if o.TenantCaps[q] > 0 && !o.RiverFetch && CappedQueuePollInterval < o.PollInterval {
				qc.FetchPollInterval = max(CappedQueuePollInterval, qc.FetchCooldown)
			}
			cfg.Queues[q] = qc
		}
		if o.Maintenance != nil {
			cfg.Queues[QueueMaintenance] = river.QueueConfig{MaxWorkers: 1, FetchCooldown: cooldown}
			cfg.PeriodicJobs = MaintenancePeriodicJobs(*o.Maintenance)
		}
		cfg.Workers = o.Workers
	}
	// Tracing first: the observer's log lines carry the attempt's span.
	if o.Tracing != nil {
		cfg.Middleware = append(cfg.Middleware, o.Tracing)
	}
	if o.Work {
		cfg.Middleware = append(cfg.Middleware, o.Observer)
	}
	if o.Maintenance != nil {
		o.Maintenance.ConfigureJobCleaner(cfg)
	}
	return cfg
}
