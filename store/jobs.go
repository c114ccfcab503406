package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
)

// CheckStatus refuses a status filter that is not one of Statuses (empty
// is any): ListJobs writes the status into its SQL as a literal.
func CheckStatus(status string) error {
	if status != "" && !slices.Contains(bpctype.Statuses, status) {
		return errcode.Invalid("status", "must be one of %s", strings.Join(bpctype.Statuses, ", "))
	}
	return nil
}

// DefaultJobPage and MaxJobPage are the default and the largest number of
// jobs a page of ListJobs holds.
const (
	DefaultJobPage = 50
	MaxJobPage     = 500
)

const jobColumns = `job_id, tenant_id, type, status, priority, attempts, max_attempts,
	idempotency_key, request_hash, payload, queue, scheduled_at, started_at, finished_at,
	lease_owner, lease_expires_at, last_error, river_job_id, river_deleted_at, created_at, updated_at`

// GetJob returns the tenant's job, whether its River job still exists
// (jobs_live) or is gone (jobs_history): the view jobs is both.
func (q *Queries) GetJob(ctx context.Context, tenantID, jobID uuid.UUID) (bpctype.Job, error) {
	return getOne[bpctype.Job](ctx, q.db, "job", jobID,
		`SELECT `+jobColumns+` FROM jobs WHERE tenant_id = $1 AND job_id = $2`, tenantID, jobID)
}

// GetJobForUpdate returns the tenant's job and, while its River job exists,
// locks its row until the end of tx. A row of jobs_history is returned
// unlocked: it never changes again (RiverDeletedAt is set).
func (q *Queries) GetJobForUpdate(ctx context.Context, tenantID, jobID uuid.UUID) (bpctype.Job, error) {
	job, err := getOne[bpctype.Job](ctx, q.db, "job", jobID,
		`SELECT `+jobColumns+` FROM jobs_live WHERE tenant_id = $1 AND job_id = $2 FOR UPDATE`, tenantID, jobID)
	if errors.Is(err, ErrNotFound) {
		return getOne[bpctype.Job](ctx, q.db, "job", jobID,
			`SELECT `+jobColumns+` FROM jobs_history WHERE tenant_id = $1 AND job_id = $2`, tenantID, jobID)
	}
	return job, err
}

// JobFilter selects jobs for ListJobs (SPEC §14). Filters combine with AND.
type JobFilter struct {
	// TenantID scopes the list to one tenant, unless AllTenants (the
	// platform operator's cross-tenant list).
	TenantID   uuid.UUID
	AllTenants bool
	Type       string
	// Status is one of Statuses, or empty for any.
	Status string
	// CreatedAfter and CreatedBefore bound created_at to [after, before).
	CreatedAfter, CreatedBefore *time.Time
	// Cursor is an opaque value from a previous page's NextCursor.
	Cursor string
	Limit  int
}

// JobPage is one page of ListJobs, newest first.
type JobPage struct {
	Items      []bpctype.Job `json:"items"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

type jobCursor struct {
	CreatedAt time.Time `json:"c"`
	JobID     uuid.UUID `json:"i"`
}

// ListJobs returns jobs newest first with keyset pagination on (created_at,
// job_id), reading each part of the SSOT by the index that answers it:
//
//   - jobs_live (River still has the job) is indexed only on columns that
//     never change, so that the mirror's updates stay HOT. A status other
//     than SUCCEEDED is found through River's own index on river_job.state
//     (the mirror keeps the live row's status equal to River's state in
//     the same transaction), then the live rows of those River jobs are
//     sorted; SUCCEEDED, the common case, walks the created_at indexes.
//   - jobs_history (River's job is gone) never changes, so it is indexed by
//     status too; it holds terminal jobs only, and is skipped for QUEUED and
//     RUNNING.
//
// Each part yields at most one page, newest first, and the two are merged.
func (q *Queries) ListJobs(ctx context.Context, f JobFilter) (JobPage, error) {
	if f.Limit <= 0 || f.Limit > MaxJobPage {
		f.Limit = DefaultJobPage
	}
	if err := CheckStatus(f.Status); err != nil {
		return JobPage{}, err
	}
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	var where []string
	var tenantArg, typeArg string
	if !f.AllTenants {
		tenantArg = arg(f.TenantID)
		where = append(where, "tenant_id = "+tenantArg)
	}
	if f.Type != "" {
		typeArg = arg(f.Type)
		where = append(where, "type = "+typeArg)
	}
	if f.Status != "" {
		// A literal, not a parameter: the planner can then use the partial
		// status indexes of jobs_history in every plan, generic ones too.
		// f.Status is one of Statuses, checked above.
		where = append(where, "status = '"+f.Status+"'")
	}
	if f.CreatedAfter != nil {
		where = append(where, "created_at >= "+arg(*f.CreatedAfter))
	}
	if f.CreatedBefore != nil {
		where = append(where, "created_at < "+arg(*f.CreatedBefore))
	}
	if f.Cursor != "" {
		c, err := decodeCursor(f.Cursor)
		if err != nil {
			return JobPage{}, err
		}
		at, id := arg(c.CreatedAt), arg(c.JobID)
		// The first term is what the indexes, keyed on created_at alone, can seek.
		where = append(where, "created_at <= "+at, "(created_at, job_id) < ("+at+", "+id+")")
	}
	cond := "TRUE"
	if len(where) > 0 {
		cond = strings.Join(where, " AND ")
	}
	page := " ORDER BY created_at DESC, job_id DESC LIMIT " + arg(f.Limit+1)

	live := `SELECT ` + jobColumns + ` FROM jobs_live WHERE ` + cond + page
	if f.Status != "" && f.Status != bpctype.StatusSucceeded {
		// River jobs in the status's states first (a nested loop by
		// construction: LATERAL), then their live rows. River's rows are
		// narrowed by what they say of the tenant (its GIN index on args;
		// the mirror's tenant_id is args' tenant_id, which the service
		// writes in canonical form) and kind, so that a tenant's dead
		// letters do not cost a visit to every other tenant's.
		river := `state IN ('` + strings.Join(riverStatesOf(f.Status), "', '") + `')`
		if tenantArg != "" {
			river += ` AND args @> jsonb_build_object('tenant_id', ` + tenantArg + `::uuid)`
		}
		if typeArg != "" {
			river += ` AND kind = ` + typeArg
		}
		live = `SELECT j.* FROM (SELECT id FROM river_job WHERE ` + river + `) r
			CROSS JOIN LATERAL (SELECT ` + jobColumns + ` FROM jobs_live
				WHERE river_job_id = r.id AND ` + cond + `) j` + page
	}
	query := live
	if f.Status == "" || bpctype.IsTerminal(f.Status) {
		query = `(` + live + `) UNION ALL (SELECT ` + jobColumns + ` FROM jobs_history WHERE ` + cond + page + `)` + page
	}
	jobs, err := list[bpctype.Job](ctx, q.db, "jobs", query, args...)
	if err != nil {
		return JobPage{}, err
	}
	out := JobPage{Items: jobs}
	if len(jobs) > f.Limit {
		out.Items = jobs[:f.Limit]
		last := out.Items[f.Limit-1]
		b, _ := json.Marshal(jobCursor{CreatedAt: last.CreatedAt, JobID: last.JobID})
		out.NextCursor = base64.RawURLEncoding.EncodeToString(b)
	}
	if out.Items == nil {
		out.Items = []bpctype.Job{}
	}
	return out, nil
}

func decodeCursor(s string) (jobCursor, error) {
	var c jobCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || c.JobID == uuid.Nil {
		return c, errcode.Invalid("cursor", "is not a cursor returned by this API")
	}
	return c, nil
}

// JobByRiverID returns the SSOT job mirroring an existing River job, across
// tenants (used by workers, which know the River job, and by operator
// tools). The job of a deleted River job is history, found by its job_id.
func (q *Queries) JobByRiverID(ctx context.Context, riverJobID int64) (bpctype.Job, error) {
	return getOne[bpctype.Job](ctx, q.db, "job for River job", riverJobID,
		`SELECT `+jobColumns+` FROM jobs_live WHERE river_job_id = $1`, riverJobID)
}

// JobsByRiverIDs returns the SSOT jobs mirroring the given existing River
// jobs, across tenants (River UI is an operator tool over every tenant).
func (q *Queries) JobsByRiverIDs(ctx context.Context, riverJobIDs []int64) ([]bpctype.Job, error) {
	return list[bpctype.Job](ctx, q.db, fmt.Sprintf("jobs of River jobs %v", riverJobIDs),
		`SELECT `+jobColumns+` FROM jobs_live WHERE river_job_id = ANY($1) ORDER BY river_job_id`, riverJobIDs)
}

// CountAvailable counts the available River jobs of queue, stopping at
// limit: a full count of a deep queue would cost more than the answer is
// worth to a caller comparing it with a threshold.
func (q *Queries) CountAvailable(ctx context.Context, queue string, limit int) (int, error) {
	var n int
	err := q.db.QueryRow(ctx, `SELECT count(*) FROM (
			SELECT 1 FROM river_job WHERE state = 'available' AND queue = $1 LIMIT $2) AS q`,
		queue, limit).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("error measuring queue %s: %w", queue, err)
	}
	return n, nil
}
