package store

import (
	"context"
	"fmt"
	"time"
)

// DeleteExpiredJobs deletes at most limit SSOT rows that finished before
// `before` and whose River job is gone, i.e. rows of jobs_history (the
// mirror moves a row there when River's job cleaner or an operator deletes
// its River job). It is the only thing that removes job history: a row
// whose River job still exists is in jobs_live and never touched, so the
// SSOT keeps at least as much as River does. It never reads or locks
// jobs_live, so it does not slow the mirror however many rows it removes.
// Rows are taken oldest first by created_at (a job finishes after it is
// created, so the rows it can take are a prefix of that index); rows locked
// by someone else are skipped. It returns the number of rows deleted;
// callers loop until it is below limit.
//
// Audit events and domain rows do not reference jobs and are not touched.
func (q *Queries) DeleteExpiredJobs(ctx context.Context, before time.Time, limit int) (int64, error) {
	tag, err := q.db.Exec(ctx, `DELETE FROM jobs_history WHERE job_id IN (
		SELECT h.job_id FROM jobs_history h
		WHERE h.created_at < $1 AND h.finished_at < $1
		ORDER BY h.created_at
		LIMIT $2
		FOR UPDATE SKIP LOCKED)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("error deleting jobs finished before %s: %w", before.Format(time.RFC3339), err)
	}
	return tag.RowsAffected(), nil
}
