package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/store"
)

// Observer is the worker middleware every job runs through. It turns typed
// errors into River's control flow (a permanent error cancels the job, which
// the mirror shows as FAILED), wraps untyped errors as INTERNAL_ERROR so
// last_error always has a code, logs one line per transition and records
// metrics. It is synchronous with the job, unlike River's event stream, so
// no outcome is lost under load.
type Observer struct {
	river.MiddlewareDefaults
	Logger  *slog.Logger
	Metrics *Metrics
}

// jobMeta is what the observer reads of a job's args and metadata.
type jobMeta struct {
	TenantID string `json:"tenant_id"`
	JobID    string `json:"bpc_job_id"`
}

// Work implements rivertype.WorkerMiddleware.
func (o *Observer) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) (err error) {
	var args, meta jobMeta
	_ = json.Unmarshal(job.EncodedArgs, &args)
	_ = json.Unmarshal(job.Metadata, &meta)
	attrs := []slog.Attr{
		slog.String("job_id", meta.JobID),
		slog.Int64("river_job_id", job.ID),
		slog.String("type", job.Kind),
		slog.String("tenant_id", args.TenantID),
		slog.Int("attempt", job.Attempt),
	}
	o.Logger.LogAttrs(ctx, slog.LevelInfo, "job transition", append(attrs, slog.String("status", store.StatusRunning))...)

	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			o.Logger.LogAttrs(ctx, slog.LevelError, "job panicked", append(attrs,
				slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack())))...)
			err = errcode.New(errcode.Internal, "panic: %v", p)
		}
		err = controlFlow(err)
		status := outcome(ctx, job, err)
		elapsed := time.Since(start)
		o.Metrics.JobsCompleted.WithLabelValues(job.Kind, status).Inc()
		o.Metrics.JobDuration.WithLabelValues(job.Kind).Observe(elapsed.Seconds())
		if status == store.StatusDeadLetter {
			o.Metrics.DeadLetter.WithLabelValues(job.Kind).Inc()
		}
		level, fields := slog.LevelInfo, append(attrs,
			slog.String("status", status),
			slog.Int64("duration_ms", elapsed.Milliseconds()))
		if err != nil {
			fields = append(fields, slog.String("error_code", string(errcode.CodeOf(err))))
			if status == store.StatusDeadLetter || status == store.StatusFailed {
				level = slog.LevelWarn
			}
		}
		o.Logger.LogAttrs(ctx, level, "job transition", fields...)
	}()
	return doInner(ctx)
}

// controlFlow maps a worker's error to what River should do with the job.
func controlFlow(err error) error {
	if err == nil {
		return nil
	}
	var cancelErr *rivertype.JobCancelError
	var snoozeErr *rivertype.JobSnoozeError
	if errors.As(err, &cancelErr) || errors.As(err, &snoozeErr) {
		return err
	}
	if e := errcode.As(err); e != nil {
		if !e.Retryable() {
			return river.JobCancel(err)
		}
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errcode.Wrap(errcode.Internal, err, "job timed out: %s", err.Error())
	}
	return errcode.Wrap(errcode.Internal, err, "%s", err.Error())
}

// outcome is the SSOT status the job will be in once River records err.
func outcome(ctx context.Context, job *rivertype.JobRow, err error) string {
	var cancelErr *rivertype.JobCancelError
	var snoozeErr *rivertype.JobSnoozeError
	switch {
	case err == nil:
		return store.StatusSucceeded
	case errors.Is(context.Cause(ctx), river.ErrJobCancelledRemotely):
		// An operator cancelled the running job (River UI, API); River
		// records it as cancelled whatever the worker returned. (Not
		// errors.Is(err, ...): every JobCancelError matches that target.)
		return store.StatusCancelled
	case errors.As(err, &cancelErr):
		return store.StatusFailed
	case errors.As(err, &snoozeErr):
		return store.StatusQueued
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return store.StatusQueued // interrupted by shutdown: River requeues it
	case job.Attempt >= job.MaxAttempts:
		return store.StatusDeadLetter
	default:
		return store.StatusQueued
	}
}
