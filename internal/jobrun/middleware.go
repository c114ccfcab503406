package jobrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

// Observer is the worker middleware every job runs through. It turns typed
// errors into River's control flow (a permanent error cancels the job, which
// the mirror shows as FAILED), types untyped errors as INTERNAL_ERROR, hands
// River each error's text as errcode.Encode's JSON, which the mirror reads
// into last_error, logs one line per transition and records metrics. It is
// synchronous with the job, unlike River's event stream, so no outcome is
// lost under load.
type Observer struct {
	river.MiddlewareDefaults
	Logger  *slog.Logger
	Metrics *workers.Metrics
	// Leases, when set, renews each job's lease while it runs and turns a
	// cancellation by shutdown into a snooze (no attempt spent).
	Leases *Leases
	kinds  sync.Map // kind → *kindMetrics
}

// kindMetrics are one job kind's metric children, resolved once: label
// hashing on every job shows on River's hot path.
type kindMetrics struct {
	duration  prometheus.Observer
	completed map[string]prometheus.Counter
	dead      prometheus.Counter
}

func (o *Observer) metricsFor(kind string) *kindMetrics {
	if km, ok := o.kinds.Load(kind); ok {
		return km.(*kindMetrics)
	}
	km := &kindMetrics{
		duration:  o.Metrics.JobDuration.WithLabelValues(kind),
		completed: make(map[string]prometheus.Counter, len(bpctype.Statuses)),
		dead:      o.Metrics.DeadLetter.WithLabelValues(kind),
	}
	for _, status := range bpctype.Statuses {
		km.completed[status] = o.Metrics.JobsCompleted.WithLabelValues(kind, status)
	}
	actual, _ := o.kinds.LoadOrStore(kind, km)
	return actual.(*kindMetrics)
}

// Prime creates the metric series of every job type the service works, at
// zero, so that a scrape shows them before the first job of a type runs: a
// counter that appears only at its first increment hides that increment
// from increase() and rate(), and so from the dead-letter alert.
func (o *Observer) Prime() {
	for _, k := range workers.Kinds() {
		o.metricsFor(k.Name)
	}
}

// Work implements rivertype.WorkerMiddleware.
func (o *Observer) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) (err error) {
	// One clock read for the start (the lease's, the first line's and the
	// duration's) and one for the end: the clock shows in the profile of a
	// job that does nothing.
	start := time.Now()
	if o.Leases != nil {
		var release func()
		ctx, release = o.Leases.hold(ctx, job, start)
		defer release() // after the outcome below is logged
	}
	var buf [9]slog.Attr
	attrs := append(buf[:0],
		slog.String("job_id", stringField(job.Metadata, "bpc_job_id")),
		slog.Int64("river_job_id", job.ID),
		slog.String("type", job.Kind),
		slog.String("tenant_id", stringField(job.EncodedArgs, "tenant_id")),
		slog.Int("attempt", job.Attempt),
	)
	base := len(attrs)
	o.log(ctx, start, slog.LevelInfo, "job transition", append(attrs, slog.String("status", bpctype.StatusRunning)))

	defer func() {
		if p := recover(); p != nil {
			o.log(ctx, time.Now(), slog.LevelError, "job panicked", append(attrs[:base],
				slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack()))))
			err = errcode.New(errcode.Internal, "panic: %v", p)
		}
		err = o.interrupted(ctx, err)
		err = controlFlow(err)
		status := bpctype.StatusOf(outcome(ctx, job, err))
		end := time.Now()
		elapsed := end.Sub(start)
		km := o.metricsFor(job.Kind)
		km.completed[status].Inc()
		km.duration.Observe(elapsed.Seconds())
		if status == bpctype.StatusDeadLetter {
			km.dead.Inc()
		}
		level, fields := slog.LevelInfo, append(attrs[:base],
			slog.String("status", status),
			slog.Int64("duration_ms", elapsed.Milliseconds()))
		if err != nil {
			var snooze *rivertype.JobSnoozeError
			if errors.As(err, &snooze) {
				// Held back (breaker open, shutdown): no attempt spent, no error.
				fields = append(fields, slog.Bool("snoozed", true))
			} else {
				fields = append(fields, slog.String("error_code", string(errcode.CodeOf(err))))
				if status == bpctype.StatusDeadLetter || status == bpctype.StatusFailed {
					level = slog.LevelWarn
				}
			}
		}
		o.log(ctx, end, level, "job transition", fields)
	}()
	return doInner(ctx)
}

// log writes one line as o.Logger.LogAttrs would, minus the caller's
// program counter: slog.Logger takes it (runtime.Callers, about 1 µs and a
// deeper stack on every call) for a handler's AddSource, which the
// service's handlers do not set (service.NewLogger) and which would only
// ever name this file. Two lines per job make it worth skipping on the
// burn-down's hot path.
func (o *Observer) log(ctx context.Context, at time.Time, level slog.Level, msg string, attrs []slog.Attr) {
	h := o.Logger.Handler()
	if !h.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(at, level, msg, 0)
	r.AddAttrs(attrs...)
	_ = h.Handle(ctx, r) // as slog.Logger does: a handler's error is dropped
}

// stringField returns the top-level string value of key in a JSON object,
// or "". The fast path covers the text Postgres returns for jsonb when key
// comes first (jsonb orders keys by length, then bytes: tenant_id leads most
// job args, bpc_job_id leads the service's metadata), which has a space
// after each colon: {"tenant_id": "…", …}. It allocates nothing but the
// result; anything else falls back to encoding/json (about 10 µs a job
// when the fast path missed every job, as the burn-down's profile showed).
func stringField(doc []byte, key string) string {
	if n := len(key); len(doc) > n+4 && doc[0] == '{' && doc[1] == '"' &&
		string(doc[2:2+n]) == key && doc[2+n] == '"' && doc[3+n] == ':' {
		rest := doc[4+n:]
		if len(rest) > 0 && rest[0] == ' ' {
			rest = rest[1:]
		}
		if len(rest) > 0 && rest[0] == '"' {
			rest = rest[1:]
			if j := bytes.IndexByte(rest, '"'); j >= 0 && bytes.IndexByte(rest[:j], '\\') < 0 {
				return string(rest[:j])
			}
		}
	}
	// Absent (River's "{}" metadata of jobs not enqueued through the
	// service): no need to decode anything.
	if !bytes.Contains(doc, []byte(`"`+key+`"`)) {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(doc, &m) != nil {
		return ""
	}
	var v string
	_ = json.Unmarshal(m[key], &v)
	return v
}

// interrupted handles a job whose context ended before it did: cancelled by
// a shutdown (requeued by a snooze, which spends no attempt) or by the loss
// of its lease (LEASE_EXPIRED, whatever error the work returned). An
// operator's cancel and River's job timeout keep their own meaning.
func (o *Observer) interrupted(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, river.ErrJobCancelledRemotely):
		return err
	case errors.Is(cause, errLeaseLost):
		return errLeaseLost
	case o.Leases.ShuttingDown() && errors.Is(ctx.Err(), context.Canceled):
		return river.JobSnooze(0)
	}
	return err
}

// controlFlow maps a worker's error to what River should do with the job
// and the text it stores: nil, a snooze as it is, or an *attemptError whose
// text is the typed error's errcode.Encode and which wraps the error River
// acts on — river.JobCancel of it for a permanent code (and for a worker's
// own river.JobCancel), so that River cancels the job. An untyped error is
// INTERNAL_ERROR, or DB_UNAVAILABLE when the database is out of reach.
func controlFlow(err error) error {
	if err == nil {
		return nil
	}
	var snoozeErr *rivertype.JobSnoozeError
	if errors.As(err, &snoozeErr) {
		return err
	}
	var cancelErr *rivertype.JobCancelError
	cancel := errors.As(err, &cancelErr)
	if errcode.As(err) == nil {
		switch {
		case cancel:
			// The worker's own text, not River's Error() of the
			// cancel, which prefixes "JobCancelError: ".
			msg := "cancelled by the worker"
			if inner := cancelErr.Unwrap(); inner != nil {
				msg = inner.Error()
			}
			err = errcode.Wrap(errcode.Internal, err, "%s", msg)
		case errors.Is(err, context.DeadlineExceeded):
			err = errcode.Wrap(errcode.Internal, err, "job timed out: %s", err.Error())
		case store.IsUnavailable(err):
			err = errcode.Wrap(errcode.DBUnavailable, err, "%s", err.Error())
		default:
			err = errcode.Wrap(errcode.Internal, err, "%s", err.Error())
		}
	}
	text := errcode.Encode(err)
	if !cancel && !errcode.As(err).Retryable() {
		err = river.JobCancel(err)
	}
	return &attemptError{text: text, err: err}
}

// attemptError is the error the observer hands River for a failed attempt.
// River stores its text with the attempt; it acts on what the error wraps
// (errors.As finds the *rivertype.JobCancelError of a permanent error), and
// wrapping keeps River's "JobCancelError: " prefix out of the stored text.
type attemptError struct {
	text string
	err  error
}

// Error returns the stored form, errcode.Encode's JSON.
func (e *attemptError) Error() string { return e.text }

// Unwrap returns the typed error, wrapped by river.JobCancel if permanent.
func (e *attemptError) Unwrap() error { return e.err }

// outcome is the River state a job will be in once River records err, and
// whether an operator's cancel put it there: bpctype.StatusOf of it is the
// SSOT status the mirror will show.
func outcome(ctx context.Context, job *rivertype.JobRow, err error) (state rivertype.JobState, byOperator bool) {
	if err == nil {
		return rivertype.JobStateCompleted, false
	}
	// Declared after the common case: errors.As takes their addresses, so
	// they live on the heap, an allocation a job that succeeded need not pay.
	var cancelErr *rivertype.JobCancelError
	var snoozeErr *rivertype.JobSnoozeError
	switch {
	case errors.Is(context.Cause(ctx), river.ErrJobCancelledRemotely):
		// An operator cancelled the running job (River UI, API); River
		// records it as cancelled whatever the worker returned. (Not
		// errors.Is(err, ...): every JobCancelError matches that target.)
		return rivertype.JobStateCancelled, true
	case errors.As(err, &cancelErr):
		return rivertype.JobStateCancelled, false
	case errors.As(err, &snoozeErr):
		// Available instead when the snooze is shorter than River's
		// scheduler interval: the same status.
		return rivertype.JobStateScheduled, false
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return rivertype.JobStateAvailable, false // interrupted by shutdown: River requeues it
	case job.Attempt >= job.MaxAttempts:
		return rivertype.JobStateDiscarded, false
	default:
		return rivertype.JobStateRetryable, false
	}
}
