package store

import (
	"context"
	"fmt"
)

// DueWorkExists reports whether anything in queues is due now for the
// worker workerID: a job it is running, or one that is available or whose
// scheduled time has come (River's scheduler makes those available).
// Other workers' running jobs and jobs in paused queues do not count, so a
// one-shot worker that waits for this to turn false never waits for them.
func (q *Queries) DueWorkExists(ctx context.Context, queues []string, workerID string) (bool, error) {
	var due bool
	err := q.db.QueryRow(ctx, `SELECT EXISTS (
		SELECT 1 FROM river_job j
		WHERE j.queue = ANY($1)
			AND ((j.state = 'running' AND j.attempted_by[array_upper(j.attempted_by, 1)] = $2)
				OR (j.state IN ('available', 'scheduled', 'retryable') AND j.scheduled_at <= now()))
			AND NOT EXISTS (SELECT 1 FROM river_queue q WHERE q.name = j.queue AND q.paused_at IS NOT NULL))`,
		queues, workerID).Scan(&due)
	if err != nil {
		return false, fmt.Errorf("error looking for due jobs: %w", err)
	}
	return due, nil
}
