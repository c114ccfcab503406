package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river/rivertype"

	"github.com/bpc-platform/bpc/bpctype"
)

// mirrorTriggers are the triggers on river_job that keep jobs in step.
var mirrorTriggers = []string{"bpc_mirror_insert", "bpc_mirror_update", "bpc_mirror_delete", "bpc_mirror_truncate"}

// Drift is one disagreement between River and the SSOT mirror.
type Drift struct {
	RiverJobID *int64     `json:"river_job_id,omitempty"`
	JobID      *uuid.UUID `json:"job_id,omitempty"`
	Problem    string     `json:"problem"`
}

// ConsistencyReport is the result of CheckConsistency.
type ConsistencyReport struct {
	RiverJobs int64 `json:"river_jobs"`
	// SSOTJobs counts the live SSOT rows compared: a job with either half
	// (jobs_live_fixed, jobs_live_state) counts once; a half without the
	// other is drift.
	SSOTJobs   int64   `json:"ssot_jobs"`
	DriftCount int     `json:"drift_count"`
	Drifts     []Drift `json:"drifts"`
}

// OK reports whether River and the mirror agree.
func (r ConsistencyReport) OK() bool { return r.DriftCount == 0 }

// maxReportedDrifts bounds the report; DriftCount still counts them all.
const maxReportedDrifts = 100

// CheckConsistency compares every River job with its SSOT row in jobs_live
// and jobs_live_state and reports drift: missing rows on either side, and any mirrored field
// that differs. Rows of jobs whose River job is gone are in jobs_history,
// unchanged from then on, and are not read: the check's cost follows River's
// table, not the length of the history.
// The status River's state stands for is StatusOf's, the Go side of the
// mapping the mirror's SQL is tested against, so a mirror function changed
// in the database by hand shows as drift too. It is an operator tool and
// reads across tenants.
func (q *Queries) CheckConsistency(ctx context.Context) (ConsistencyReport, error) {
	rep := ConsistencyReport{Drifts: []Drift{}}
	add := func(riverID *int64, jobID *uuid.UUID, format string, args ...any) {
		rep.DriftCount++
		if len(rep.Drifts) < maxReportedDrifts {
			rep.Drifts = append(rep.Drifts, Drift{RiverJobID: riverID, JobID: jobID, Problem: fmt.Sprintf(format, args...)})
		}
	}

	rows, err := q.db.Query(ctx, `SELECT t.tgname, t.tgenabled FROM pg_trigger t
		WHERE t.tgrelid = 'river_job'::regclass AND t.tgname = ANY($1)`, mirrorTriggers)
	if err != nil {
		return rep, fmt.Errorf("error reading mirror triggers: %w", err)
	}
	enabled := map[string]string{}
	for rows.Next() {
		var name, state string
		if err := rows.Scan(&name, &state); err != nil {
			return rep, fmt.Errorf("error reading mirror triggers: %w", err)
		}
		enabled[name] = state
	}
	if err := rows.Err(); err != nil {
		return rep, fmt.Errorf("error reading mirror triggers: %w", err)
	}
	for _, name := range mirrorTriggers {
		switch state, ok := enabled[name]; {
		case !ok:
			add(nil, nil, "mirror trigger %s is missing on river_job", name)
		case state != "A":
			add(nil, nil, "mirror trigger %s is not enabled ALWAYS (tgenabled=%s)", name, state)
		}
	}

	rows, err = q.db.Query(ctx, `SELECT
			r.id, r.kind, r.state::text, r.metadata, r.attempt, r.max_attempts, r.priority, r.queue,
			r.scheduled_at, r.attempted_at, r.finalized_at, r.attempted_by[array_upper(r.attempted_by, 1)],
			r.args->>'tenant_id', jsonb_array_length(COALESCE(to_jsonb(r.errors), '[]')),
			j.river_job_id, j.job_id, j.type, j.status, j.attempts, j.max_attempts, j.priority, j.queue,
			j.scheduled_at, j.started_at, j.finished_at, j.lease_owner, j.tenant_id,
			(j.last_error->>'attempt')::integer
		FROM river_job r
		FULL JOIN (
			-- Either half of a live row may be missing: no inner join here.
			SELECT coalesce(l.river_job_id, s.river_job_id) AS river_job_id, l.job_id, l.type, l.tenant_id,
				s.status, s.attempts, s.max_attempts, s.priority, s.queue, s.scheduled_at, s.started_at,
				s.finished_at, s.lease_owner, s.last_error
			FROM jobs_live_fixed l FULL JOIN jobs_live_state s ON s.river_job_id = l.river_job_id) j
		ON j.river_job_id = r.id`)
	if err != nil {
		return rep, fmt.Errorf("error reading River and SSOT jobs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			rID, jRiverID                          *int64
			rKind, rState, rQueue, rOwner, rTenant *string
			rMeta                                  []byte
			rAttempt, rMax, rPriority, rErrCount   *int32
			rScheduled, rAttempted, rFinalized     *time.Time
			jID                                    *uuid.UUID
			jType, jStatus, jQueue, jOwner         *string
			jAttempts, jMax                        *int32
			jPriority                              *int16
			jScheduled, jStarted, jFinished        *time.Time
			jTenant                                *uuid.UUID
			jErrAttempt                            *int32
		)
		if err := rows.Scan(&rID, &rKind, &rState, &rMeta, &rAttempt, &rMax, &rPriority, &rQueue,
			&rScheduled, &rAttempted, &rFinalized, &rOwner, &rTenant, &rErrCount,
			&jRiverID, &jID, &jType, &jStatus, &jAttempts, &jMax, &jPriority, &jQueue,
			&jScheduled, &jStarted, &jFinished, &jOwner, &jTenant, &jErrAttempt); err != nil {
			return rep, fmt.Errorf("error scanning River and SSOT jobs: %w", err)
		}
		if rID != nil {
			rep.RiverJobs++
		}
		if jRiverID != nil {
			rep.SSOTJobs++ // either half of a live row counts as one
		}
		switch {
		case jRiverID == nil:
			add(rID, nil, "River job (%s, %s) has no SSOT row", deref(rKind), deref(rState))
			continue
		case jID == nil:
			// Named by the state half's river_job_id, the only id it has.
			add(jRiverID, nil, "SSOT row has no fixed half (a jobs_live_state row without jobs_live_fixed)%s", gone(rID))
			continue
		case jStatus == nil:
			add(jRiverID, jID, "SSOT row has no state (no jobs_live_state row)%s", gone(rID))
			continue
		case rID == nil:
			add(jRiverID, jID, "SSOT job is %s in jobs_live but its River job is gone (it belongs in jobs_history)", *jStatus)
			continue
		}
		want := bpctype.StatusOf(rivertype.JobState(*rState), bpctype.CancelledByOperator(rMeta))
		if *jStatus != want {
			add(rID, jID, "status %s, River state %s means %s", *jStatus, *rState, want)
		}
		if *jType != *rKind {
			add(rID, jID, "type %s, River kind %s", *jType, *rKind)
		}
		if *jAttempts != *rAttempt || *jMax != *rMax {
			add(rID, jID, "attempts %d/%d, River %d/%d", *jAttempts, *jMax, *rAttempt, *rMax)
		}
		if int32(*jPriority) != *rPriority-1 {
			add(rID, jID, "priority %d, River priority %d", *jPriority, *rPriority)
		}
		if *jQueue != *rQueue {
			add(rID, jID, "queue %s, River queue %s", *jQueue, *rQueue)
		}
		if !sameTime(jScheduled, rScheduled) || !sameTime(jStarted, rAttempted) || !sameTime(jFinished, rFinalized) {
			add(rID, jID, "timestamps differ from River's scheduled_at/attempted_at/finalized_at")
		}
		wantOwner := (*string)(nil)
		if *rState == "running" {
			wantOwner = rOwner
		}
		if deref(jOwner) != deref(wantOwner) {
			add(rID, jID, "lease_owner %q, River attempted_by %q", deref(jOwner), deref(wantOwner))
		}
		wantTenant := SystemTenantID
		if rTenant != nil {
			if t, err := uuid.Parse(*rTenant); err == nil {
				wantTenant = t
			}
		}
		if *jTenant != wantTenant {
			add(rID, jID, "tenant_id %s, River args tenant_id %s", *jTenant, wantTenant)
		}
		switch {
		case *rErrCount == 0 && jErrAttempt != nil:
			add(rID, jID, "last_error set but River has no errors")
		case *rErrCount > 0 && jErrAttempt == nil:
			add(rID, jID, "last_error missing but River has %d errors", *rErrCount)
		}
	}
	if err := rows.Err(); err != nil {
		return rep, fmt.Errorf("error reading River and SSOT jobs: %w", err)
	}
	return rep, nil
}

// gone is the suffix of a half row's drift whose River job is gone too.
func gone(riverID *int64) string {
	if riverID == nil {
		return ", and its River job is gone"
	}
	return ""
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}
