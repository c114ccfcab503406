package store

import (
	"context"
	"fmt"
	"time"
)

// DeleteExpiredJobs deletes at most limit SSOT jobs rows that are terminal,
// finished before `before`, and whose River job is gone (River's job cleaner
// or an operator deleted it; the mirror then set river_deleted_at). It is the
// only thing that removes job history: a row whose River job still exists is
// never touched, so the SSOT keeps at least as much as River does. Rows locked
// by someone else are skipped (the next batch or run takes them). It returns
// the number of rows deleted; callers loop until it is below limit.
//
// Audit events and domain rows do not reference jobs and are not touched.
func (q *Queries) DeleteExpiredJobs(ctx context.Context, before time.Time, limit int) (int64, error) {
	tag, err := q.db.Exec(ctx, `DELETE FROM jobs WHERE job_id IN (
		SELECT j.job_id FROM jobs j
		WHERE j.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED', 'DEAD_LETTER')
			AND j.finished_at < $1
			AND NOT EXISTS (SELECT 1 FROM river_job r WHERE r.id = j.river_job_id)
		LIMIT $2
		FOR UPDATE SKIP LOCKED)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("error deleting jobs finished before %s: %w", before.Format(time.RFC3339), err)
	}
	return tag.RowsAffected(), nil
}
