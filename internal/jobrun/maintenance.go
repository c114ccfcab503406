package jobrun

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// QueueMaintenance is the queue of the maintenance jobs: a slow consistency
// check never holds up the pipeline's workers.
const QueueMaintenance = "maintenance"

// Maintenance job kinds (River kinds and SSOT types).
const (
	KindMaintenanceConsistency = "BPC_MAINTENANCE_CONSISTENCY"
	KindMaintenanceRetention   = "BPC_MAINTENANCE_RETENTION"
)

// MaintenanceConfig schedules the maintenance jobs and sets retention: a
// consistency check of the SSOT mirror and the retention of job history, as
// River periodic jobs.
//
// River's periodic job enqueuer runs on the elected leader only, so however
// many nodes run, each maintenance job is inserted once per interval and
// worked once (by whichever node fetches it from QueueMaintenance). Each job
// is also unique per interval (UniqueOpts.ByPeriod), so a leader change, a
// restart (RunOnStart) or `bpc tick` inserting it again within the same
// interval adds no second run.
//
// Retention has two halves:
//
//   - River's rows: River's own job cleaner (a leader-only maintenance
//     service) already deletes finalized river_job rows in batches; it is
//     configured with MaintenanceConfig.RiverRetention through
//     ConfigureJobCleaner instead of deleting river_job rows here. The mirror's
//     delete trigger keeps each SSOT row, moved to jobs_history and marked
//     river_deleted_at.
//   - SSOT rows: jobs_history is the job history; the retention job deletes
//     its rows once they finished longer than MaintenanceConfig.JobsRetention
//     ago (store.DeleteExpiredJobs), never touching jobs_live. Audit events
//     and domain data are never deleted. An idempotency key is remembered as
//     long as its SSOT row.
type MaintenanceConfig struct {
	// ConsistencyInterval is how often the mirror is checked.
	ConsistencyInterval time.Duration
	// RetentionInterval is how often the retention job runs.
	RetentionInterval time.Duration
	// RiverRetention is how long River keeps completed, cancelled and
	// discarded jobs (River UI shows them; dead letters can be retried from
	// it) before its job cleaner deletes them; zero or less keeps them.
	RiverRetention time.Duration
	// JobsRetention is how long SSOT rows of finished jobs are kept after
	// they finished; zero or less keeps them. A row is never deleted while
	// its River job exists, so in effect it is at least RiverRetention.
	JobsRetention time.Duration
	// RetentionBatchSize bounds the rows one DELETE removes.
	RetentionBatchSize int
	// RetentionBudget bounds one retention run; what is left waits for the
	// next run.
	RetentionBudget time.Duration
}

// DefaultMaintenanceConfig returns the defaults: consistency every 5
// minutes, retention hourly, River rows kept 7 days, SSOT rows 90 days.
func DefaultMaintenanceConfig() MaintenanceConfig {
	return MaintenanceConfig{
		ConsistencyInterval: 5 * time.Minute,
		RetentionInterval:   time.Hour,
		RiverRetention:      7 * 24 * time.Hour,
		JobsRetention:       90 * 24 * time.Hour,
		RetentionBatchSize:  1000,
		RetentionBudget:     time.Minute,
	}
}

// ConfigureJobCleaner sets River's job cleaner to keep finalized jobs for
// c.RiverRetention (all three final states alike).
func (c MaintenanceConfig) ConfigureJobCleaner(rc *river.Config) {
	d := c.RiverRetention
	if d <= 0 {
		d = -1 // River: never delete
	}
	rc.CompletedJobRetentionPeriod = d
	rc.CancelledJobRetentionPeriod = d
	rc.DiscardedJobRetentionPeriod = d
}

// MaintenanceConsistencyArgs runs store.CheckConsistency.
type MaintenanceConsistencyArgs struct{}

// Kind returns KindMaintenanceConsistency.
func (MaintenanceConsistencyArgs) Kind() string { return KindMaintenanceConsistency }

// InsertOpts puts the job on QueueMaintenance.
func (MaintenanceConsistencyArgs) InsertOpts() river.InsertOpts { return maintenanceInsertOpts() }

// MaintenanceRetentionArgs deletes expired SSOT job history.
type MaintenanceRetentionArgs struct{}

// Kind returns KindMaintenanceRetention.
func (MaintenanceRetentionArgs) Kind() string { return KindMaintenanceRetention }

// InsertOpts puts the job on QueueMaintenance.
func (MaintenanceRetentionArgs) InsertOpts() river.InsertOpts { return maintenanceInsertOpts() }

func maintenanceInsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueMaintenance, Priority: jobargs.RiverPriority(jobargs.PriorityLow), MaxAttempts: 3}
}

// maintenanceJobs pairs each maintenance job with its interval.
func (c MaintenanceConfig) maintenanceJobs() []struct {
	id    string
	args  river.JobArgs
	every time.Duration
} {
	return []struct {
		id    string
		args  river.JobArgs
		every time.Duration
	}{
		{"bpc_maintenance_consistency", MaintenanceConsistencyArgs{}, c.ConsistencyInterval},
		{"bpc_maintenance_retention", MaintenanceRetentionArgs{}, c.RetentionInterval},
	}
}

// MaintenancePeriodicJobs returns the periodic jobs for river.Config's
// PeriodicJobs. Both run on start (a new leader checks at once) and are
// unique per interval. A zero interval leaves that job out.
func MaintenancePeriodicJobs(cfg MaintenanceConfig) []*river.PeriodicJob {
	var out []*river.PeriodicJob
	for _, j := range cfg.maintenanceJobs() {
		if j.every <= 0 {
			continue
		}
		out = append(out, river.NewPeriodicJob(river.PeriodicInterval(j.every),
			func() (river.JobArgs, *river.InsertOpts) {
				return j.args, &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByPeriod: j.every}}
			},
			&river.PeriodicJobOpts{ID: j.id, RunOnStart: true}))
	}
	return out
}

// DueMaintenanceJobs returns insert parameters for every maintenance job,
// unique per interval: inserting them inserts only those that have not run
// (nor are queued) in the current interval. `bpc tick` uses it, since a
// short-lived process cannot rely on the periodic enqueuer.
func DueMaintenanceJobs(cfg MaintenanceConfig) []river.InsertManyParams {
	var out []river.InsertManyParams
	for _, j := range cfg.maintenanceJobs() {
		if j.every <= 0 {
			continue
		}
		out = append(out, river.InsertManyParams{Args: j.args,
			InsertOpts: &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByPeriod: j.every}}})
	}
	return out
}

// MaintenanceDeps are what the maintenance workers need.
type MaintenanceDeps struct {
	Store   *store.Queries
	Logger  *slog.Logger
	Metrics *MaintenanceMetrics
	Config  MaintenanceConfig
}

// RegisterMaintenance adds the maintenance workers to w.
func RegisterMaintenance(w *river.Workers, deps MaintenanceDeps) {
	river.AddWorker(w, &MaintenanceConsistencyWorker{Deps: deps})
	river.AddWorker(w, &MaintenanceRetentionWorker{Deps: deps})
}

// maxLoggedDrifts bounds the drifts one log line carries.
const maxLoggedDrifts = 5

// MaintenanceConsistencyWorker compares River's jobs with the SSOT mirror
// (as `bpc doctor` does), logs the result and sets bpc_mirror_drift. Drift
// is reported, not failed: a retry would find the same drift.
type MaintenanceConsistencyWorker struct {
	river.WorkerDefaults[MaintenanceConsistencyArgs]
	Deps MaintenanceDeps
}

// Timeout lets the check (a full join of river_job and jobs) take up to
// its interval, at least a minute.
func (w *MaintenanceConsistencyWorker) Timeout(*river.Job[MaintenanceConsistencyArgs]) time.Duration {
	return max(w.Deps.Config.ConsistencyInterval, time.Minute)
}

// Work runs the check.
func (w *MaintenanceConsistencyWorker) Work(ctx context.Context, _ *river.Job[MaintenanceConsistencyArgs]) error {
	start := time.Now()
	rep, err := w.Deps.Store.CheckConsistency(ctx)
	if err != nil {
		return err
	}
	w.Deps.Metrics.MirrorDrift.Set(float64(rep.DriftCount))
	w.Deps.Metrics.MirrorChecked.SetToCurrentTime()

	attrs := []slog.Attr{
		slog.Int64("river_jobs", rep.RiverJobs),
		slog.Int64("ssot_jobs", rep.SSOTJobs),
		slog.Int("drift_count", rep.DriftCount),
		slog.Int64("duration_ms", time.Since(start).Milliseconds()),
	}
	if rep.OK() {
		w.Deps.Logger.LogAttrs(ctx, slog.LevelInfo, "mirror consistency check", attrs...)
		return nil
	}
	drifts := make([]string, 0, maxLoggedDrifts)
	for _, d := range rep.Drifts[:min(len(rep.Drifts), maxLoggedDrifts)] {
		drifts = append(drifts, describeDrift(d))
	}
	w.Deps.Logger.LogAttrs(ctx, slog.LevelWarn, "mirror consistency check", append(attrs, slog.Any("drifts", drifts))...)
	return nil
}

func describeDrift(d store.Drift) string {
	s := ""
	if d.RiverJobID != nil {
		s += fmt.Sprintf("river_job_id=%d ", *d.RiverJobID)
	}
	if d.JobID != nil {
		s += fmt.Sprintf("job_id=%s ", d.JobID)
	}
	return s + d.Problem
}

// MaintenanceRetentionWorker deletes expired SSOT job history in batches
// (store.DeleteExpiredJobs) until none is left or RetentionBudget is spent.
// River's rows are left to River's job cleaner (see ConfigureJobCleaner).
type MaintenanceRetentionWorker struct {
	river.WorkerDefaults[MaintenanceRetentionArgs]
	Deps MaintenanceDeps
}

// Timeout is the budget plus room for the last batch.
func (w *MaintenanceRetentionWorker) Timeout(*river.Job[MaintenanceRetentionArgs]) time.Duration {
	return w.Deps.Config.RetentionBudget + time.Minute
}

// Work deletes one run's worth of expired rows.
func (w *MaintenanceRetentionWorker) Work(ctx context.Context, _ *river.Job[MaintenanceRetentionArgs]) error {
	cfg := w.Deps.Config
	if cfg.JobsRetention <= 0 {
		w.Deps.Logger.LogAttrs(ctx, slog.LevelInfo, "job retention", slog.String("ssot", "kept forever"))
		return nil
	}
	start := time.Now()
	before := start.Add(-cfg.JobsRetention)
	batch := max(cfg.RetentionBatchSize, 1)
	var deleted int64
	done := false
	for { // at least one batch, however small the budget
		n, err := w.Deps.Store.DeleteExpiredJobs(ctx, before, batch)
		deleted += n
		w.Deps.Metrics.RetentionDeleted.Add(float64(n))
		if err != nil {
			return fmt.Errorf("error after deleting %d expired jobs: %w", deleted, err)
		}
		done = n < int64(batch)
		if done || time.Since(start) >= cfg.RetentionBudget {
			break
		}
	}
	w.Deps.Logger.LogAttrs(ctx, slog.LevelInfo, "job retention",
		slog.Int64("ssot_deleted", deleted),
		slog.Time("finished_before", before),
		// false: the budget ran out; the next run continues.
		slog.Bool("complete", done),
		slog.Int64("duration_ms", time.Since(start).Milliseconds()))
	return nil
}
