package jobrun

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

// Leases keeps the SSOT leases of the jobs this process runs (SPEC §3).
// River gives a running job no lease of its own: its rescuer judges a job
// stuck by when the attempt started, so a long healthy job and a dead one
// look alike. Here a job's lease (jobs.lease_expires_at, set by the mirror
// when the attempt starts) is renewed every Renew to now + TTL while the job
// runs — one statement per period for all of the process's running jobs,
// by Run — the Reaper returns jobs whose lease expired, and handlers fence
// their commit on the lease (store.FenceLease).
type Leases struct {
	Store  *store.Queries
	Logger *slog.Logger
	// Owner is this process's River client id: the lease_owner of its jobs.
	Owner string
	TTL   time.Duration
	Renew time.Duration

	shuttingDown atomic.Bool
	// running is sharded by River job id: every job start and end touches
	// it, from up to thousands of concurrent workers.
	running [leaseShards]leaseShard
}

const leaseShards = 64

type leaseShard struct {
	mu sync.Mutex
	m  map[int64]*heldLease
}

func (l *Leases) shard(id int64) *leaseShard { return &l.running[uint64(id)%leaseShards] }

// heldLease is one running attempt whose lease Run renews.
type heldLease struct {
	attempt int
	kind    string
	ctx     context.Context
	cancel  context.CancelCauseFunc
	renewed time.Time
}

// errLeaseLost is the cause a job's context is cancelled with when its lease
// is gone: the job was reaped (and may already run elsewhere) or cancelled.
var errLeaseLost = errcode.New(errcode.LeaseExpired, "the job's lease was lost; its effects are left to the attempt that holds it")

// hold registers job's lease for renewal and returns the context to work the
// job in, cancelled with a LEASE_EXPIRED cause when the lease is lost or
// cannot be renewed before it would expire, and a func that ends the hold.
// Renewal stops when the job's own context ends (River's job timeout), so a
// worker hung past its timeout loses its lease within TTL and is reaped.
// Holding costs a map entry: no goroutine or timer per job. now is the
// attempt's start here, the first renewal's reference.
func (l *Leases) hold(ctx context.Context, job *rivertype.JobRow, now time.Time) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	h := &heldLease{attempt: job.Attempt, kind: job.Kind, ctx: ctx, cancel: cancel, renewed: now}
	sh := l.shard(job.ID)
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = map[int64]*heldLease{}
	}
	sh.m[job.ID] = h
	sh.mu.Unlock()
	return ctx, func() {
		sh.mu.Lock()
		if sh.m[job.ID] == h {
			delete(sh.m, job.ID)
		}
		sh.mu.Unlock()
		cancel(nil)
	}
}

// Run renews the held leases every Renew until ctx ends.
func (l *Leases) Run(ctx context.Context) {
	every(ctx, l.Renew, func() { l.renewOnce(ctx) })
}

// every calls f every interval until ctx ends, the first time an interval
// after it is called.
func every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f()
	}
}

// renewOnce renews every held lease whose job is still working.
func (l *Leases) renewOnce(ctx context.Context) {
	var holds []store.LeaseHold
	held := map[int64]*heldLease{}
	for i := range l.running {
		sh := &l.running[i]
		sh.mu.Lock()
		for id, h := range sh.m {
			if h.ctx.Err() == nil {
				holds = append(holds, store.LeaseHold{RiverJobID: id, Attempt: h.attempt})
				held[id] = h
			}
		}
		sh.mu.Unlock()
	}
	if len(holds) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, l.Renew)
	got, err := l.Store.RenewLeases(rctx, holds, l.Owner, l.TTL)
	cancel()
	now := time.Now()
	for id, h := range held {
		outcome, ok := got[id]
		switch {
		case err == nil && ok && outcome == store.LeaseRenewed:
			h.renewed = now
		case err == nil && ok && outcome == store.LeaseFinished:
			// Committed: nothing left to protect.
		case err == nil && ok && outcome == store.LeaseLost:
			// In the job's context: the line carries its attempt's trace.
			l.Logger.WarnContext(h.ctx, "job lease lost", slog.Int64("river_job_id", id), slog.String("type", h.kind),
				slog.Int("attempt", h.attempt))
			h.cancel(errLeaseLost)
		case now.Sub(h.renewed)+l.Renew >= l.TTL:
			// Busy or failing for a whole lease: it is about to expire.
			reason := "its row stayed locked"
			if err != nil {
				reason = err.Error()
			}
			l.Logger.WarnContext(h.ctx, "job lease could not be renewed before expiry", slog.Int64("river_job_id", id),
				slog.String("type", h.kind), slog.String("error", reason))
			h.cancel(errLeaseLost)
		case err != nil:
			l.Logger.WarnContext(h.ctx, "job lease renewal failed; retrying", slog.Int64("river_job_id", id), slog.String("error", err.Error()))
		}
	}
}

// BeginShutdown marks the process as stopping: jobs cancelled from now on
// (River's StopAndCancel after the shutdown timeout) are snoozed back to the
// queue instead of failing an attempt.
func (l *Leases) BeginShutdown() {
	if l != nil {
		l.shuttingDown.Store(true)
	}
}

// ShuttingDown reports whether BeginShutdown was called.
func (l *Leases) ShuttingDown() bool { return l != nil && l.shuttingDown.Load() }

// DefaultMaxLeaseExpiries is how many attempts in a row may end with an
// expired lease before the job is discarded (BPC_JOBS_MAX_LEASE_EXPIRIES).
const DefaultMaxLeaseExpiries = 2

// Reaper returns running jobs whose lease expired to River, on an interval,
// in every worker process; an advisory lock lets one act per tick. A job
// that lost its worker MaxLeaseExpiries times in a row is discarded instead
// (DEAD_LETTER, "worker lost N times"): a job that crashes the process
// working it would otherwise hop from worker to worker, taking each one down
// with every other job it was running.
type Reaper struct {
	Store    *store.Queries
	Logger   *slog.Logger
	Metrics  *workers.Metrics
	Interval time.Duration
	// MaxLeaseExpiries bounds the lease losses in a row (zero:
	// DefaultMaxLeaseExpiries).
	MaxLeaseExpiries int
}

// Run reaps every Interval until ctx ends.
func (r *Reaper) Run(ctx context.Context) {
	every(ctx, r.Interval, func() {
		if _, err := r.ReapOnce(ctx); err != nil && ctx.Err() == nil {
			r.Logger.Warn("lease reaper failed; retrying next tick", slog.String("error", err.Error()))
		}
	})
}

// ReapOnce runs one reaping pass and returns the jobs it returned to River.
func (r *Reaper) ReapOnce(ctx context.Context) ([]store.ReapedJob, error) {
	maxLosses := r.MaxLeaseExpiries
	if maxLosses <= 0 {
		maxLosses = DefaultMaxLeaseExpiries
	}
	reaped, err := r.Store.ReapExpiredLeases(ctx, 1000, maxLosses)
	for _, j := range reaped {
		status := bpctype.StatusQueued
		if j.State == "discarded" {
			status = bpctype.StatusDeadLetter
			if r.Metrics != nil {
				r.Metrics.DeadLetter.WithLabelValues(j.Kind).Inc()
			}
		}
		if r.Metrics != nil {
			r.Metrics.JobsCompleted.WithLabelValues(j.Kind, status).Inc()
		}
		level := slog.LevelWarn
		if j.Poison {
			// Worth an operator's look: the job may crash whatever runs it.
			level = slog.LevelError
		}
		r.Logger.LogAttrs(ctx, level, "job transition", slog.Int64("river_job_id", j.RiverJobID), slog.String("type", j.Kind),
			slog.Int("attempt", j.Attempt), slog.String("status", status), slog.String("error_code", string(errcode.LeaseExpired)),
			slog.String("lease_owner", j.Owner), slog.Time("lease_expired_at", j.ExpiredAt),
			slog.Int("lease_losses", j.LeaseLosses), slog.Bool("poison", j.Poison))
	}
	return reaped, err
}
