// Package tick works the jobs that are due now and returns: what `bpc tick`
// runs, for cron-style deployments (Kubernetes CronJob, Cloud Run jobs) and
// one-shot runs. A tick is the worker role of `bpc serve` — same River
// client, workers, leases and mirror — run until there is nothing due or a
// budget is spent. Jobs scheduled in the future (retries in backoff,
// snoozes, scheduled_at) are left for the next tick.
package tick

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/jobrun"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// Options bound one tick.
type Options struct {
	// MaxDuration is the time budget; running jobs then get the shutdown
	// timeout (BPC_WORKER_SHUTDOWN_TIMEOUT_MS) to finish.
	MaxDuration time.Duration
	// MaxJobs is the item budget: job attempts worked. Jobs already fetched
	// when it is reached still finish, so a tick may work up to the worker
	// concurrency more (the tick caps concurrency at MaxJobs).
	MaxJobs int
	// Maintenance, when set, inserts the maintenance jobs not yet run in
	// their current interval, so that a deployment of ticks alone still
	// checks the mirror and applies retention (a short-lived process cannot
	// rely on River's periodic enqueuer).
	Maintenance *jobrun.MaintenanceConfig
	// PollEvery is how often the queues are checked for due work.
	PollEvery time.Duration
	// OnInterrupt, when set, is called with the tick's logger once ctx
	// ends the tick, before the graceful stop: the command line uses it
	// to exit at once on a second signal.
	OnInterrupt func(*slog.Logger)
}

// Why a tick stopped: the values of Result.Reason.
const (
	StoppedEmpty       = "empty"
	StoppedMaxJobs     = "max-jobs"
	StoppedMaxDuration = "max-duration"
	StoppedInterrupted = "interrupted"
	StoppedFailed      = "error"
)

var reasons = map[string]string{
	StoppedEmpty:       "no due jobs left",
	StoppedMaxJobs:     "item budget (--max-jobs) reached",
	StoppedMaxDuration: "time budget (--max-duration) spent",
	StoppedInterrupted: "interrupted",
	StoppedFailed:      "error",
}

// Result is what a tick did.
type Result struct {
	Reason string
	// Worked counts job attempts this process finished, ByStatus by the
	// SSOT status each left its job in (QUEUED: a retry or snooze follows).
	Worked   int
	ByStatus map[string]int
	Duration time.Duration
}

func (r *Result) record(ev *river.Event) {
	r.Worked++
	r.ByStatus[bpctype.StatusOf(ev.Job.State, bpctype.CancelledByOperator(ev.Job.Metadata))]++
}

// Summary is the tick's one-line report.
func (r Result) Summary() string {
	var counts []string
	for _, s := range bpctype.Statuses {
		if n := r.ByStatus[s]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s=%d", s, n))
		}
	}
	detail := ""
	if len(counts) > 0 {
		detail = " (" + strings.Join(counts, " ") + ")"
	}
	return fmt.Sprintf("bpc tick: worked %d job(s)%s in %s; stopped: %s",
		r.Worked, detail, r.Duration.Round(time.Millisecond), reasons[r.Reason])
}

// eventKinds are the events River sends when an attempt ends.
var eventKinds = []river.EventKind{
	river.EventKindJobCompleted, river.EventKindJobFailed,
	river.EventKindJobCancelled, river.EventKindJobSnoozed,
}

// Run starts the worker role of cfg's service on pool, waits until no job
// is due in the service's queues or a budget is spent, stops gracefully
// and prints the summary to stdout after the service's log. It fails only
// on errors; a spent budget is a normal end.
func Run(ctx context.Context, cfg service.Config, pool *pgxpool.Pool, o Options, stdout io.Writer) (Result, error) {
	start := time.Now()
	res := Result{ByStatus: map[string]int{}}
	if o.PollEvery <= 0 {
		o.PollEvery = 100 * time.Millisecond
	}
	// Health and metrics on a port nobody scrapes: an ephemeral loopback
	// one, so a tick never collides with a service on the same host.
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.WorkerConcurrency = max(1, min(cfg.WorkerConcurrency, o.MaxJobs))
	// The pipeline queue's short fetch cooldown is for latency, which a
	// tick does not serve: with it, a worker fetches many more quick jobs
	// in the time River takes to report the first completions that count
	// against the item budget.
	cfg.PipelineCooldown = 0
	logger := service.NewLogger(cfg, stdout)

	a, err := service.New(cfg, service.RoleWorker, logger, pool)
	if err != nil {
		return res, err
	}
	events, _ := a.River().Subscribe(eventKinds...) // closed by River's stop
	// Not ctx: cancelling River's start context cancels running jobs, and
	// an interrupted tick stops gracefully like serve.
	if err := a.Start(context.WithoutCancel(ctx)); err != nil {
		a.Stop(context.Background())
		return res, err
	}

	var runErr error
	fail := func(err error) {
		if ctx.Err() != nil {
			res.Reason = StoppedInterrupted
			return
		}
		runErr, res.Reason = err, StoppedFailed
	}
	if o.Maintenance != nil {
		if err := insertDueMaintenance(ctx, a, *o.Maintenance, logger); err != nil {
			fail(err)
		}
	}
	queues := append(slices.Clone(jobargs.Queues), jobrun.QueueMaintenance)
	check := func() {
		switch due, err := store.New(pool).DueWorkExists(ctx, queues, cfg.WorkerID); {
		case err != nil:
			fail(err)
		case !due:
			res.Reason = StoppedEmpty
		}
	}
	if res.Reason == "" {
		check()
	}
	deadline := time.NewTimer(o.MaxDuration)
	defer deadline.Stop()
	poll := time.NewTicker(o.PollEvery)
	defer poll.Stop()
	for res.Reason == "" {
		select {
		case <-ctx.Done():
			res.Reason = StoppedInterrupted
		case <-deadline.C:
			res.Reason = StoppedMaxDuration
		case <-poll.C:
			check()
		case ev, ok := <-events:
			if !ok {
				fail(errors.New("River stopped while working jobs"))
				events = nil
				break
			}
			res.record(ev)
			if res.Worked >= o.MaxJobs {
				res.Reason = StoppedMaxJobs
			}
		}
	}

	if res.Reason == StoppedInterrupted && o.OnInterrupt != nil {
		o.OnInterrupt(logger)
	}
	a.Stop(context.Background())
	// River delivers the events of the jobs that finished during the stop,
	// then closes the subscription.
	for drain := time.After(10 * time.Second); events != nil; {
		select {
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			res.record(ev)
		case <-drain:
			events = nil
		}
	}
	res.Duration = time.Since(start)
	fmt.Fprintln(stdout, res.Summary())
	return res, runErr
}

// insertDueMaintenance inserts the maintenance jobs that have not run in
// their current interval (unique per interval, so the periodic enqueuer and
// other ticks add no second run).
func insertDueMaintenance(ctx context.Context, a *service.App, m jobrun.MaintenanceConfig, logger *slog.Logger) error {
	params := jobrun.DueMaintenanceJobs(m)
	if len(params) == 0 {
		return nil
	}
	res, err := a.River().InsertMany(ctx, params)
	var unknown *river.UnknownJobKindError
	switch {
	case errors.As(err, &unknown):
		logger.Warn("maintenance workers are not registered; skipping maintenance", slog.String("kind", unknown.Kind))
		return nil
	case err != nil:
		return fmt.Errorf("error inserting maintenance jobs: %w", err)
	}
	var queues []string
	for _, r := range res {
		if !r.UniqueSkippedAsDuplicate {
			logger.Info("maintenance job due", slog.String("type", r.Job.Kind), slog.Int64("river_job_id", r.Job.ID))
			queues = append(queues, r.Job.Queue)
		}
	}
	if t := a.Trigger(); t != nil {
		// River wakes its own producers after this insert only when it has
		// no listener; with the trigger's, the trigger wakes them.
		t.Publish(queues)
	}
	return nil
}
