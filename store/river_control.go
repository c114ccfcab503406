package store

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// RiverJobRef names a River job and its queue.
type RiverJobRef struct {
	ID      int64  `db:"id"`
	Attempt int    `db:"attempt"`
	Queue   string `db:"queue"`
}

// CancelRequestedJobs returns the running River jobs whose cancellation was
// requested (River marks them with cancel_attempted_at until they return):
// what River's cancel notifications say, for a process that cannot LISTEN.
func (q *Queries) CancelRequestedJobs(ctx context.Context) ([]RiverJobRef, error) {
	return list[RiverJobRef](ctx, q.db, "jobs to cancel",
		`SELECT id, attempt, queue FROM river_job WHERE state = 'running' AND metadata ? 'cancel_attempted_at'`)
}

// RiverQueuesPaused returns whether each of River's queues is paused.
func (q *Queries) RiverQueuesPaused(ctx context.Context) (map[string]bool, error) {
	type row struct {
		Name   string `db:"name"`
		Paused bool   `db:"paused"`
	}
	rows, err := collect(ctx, q.db, "River queues", pgx.RowToStructByName[row],
		`SELECT name, paused_at IS NOT NULL AS paused FROM river_queue`)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(rows))
	for _, r := range rows {
		out[r.Name] = r.Paused
	}
	return out, nil
}

// RiverJobQueues returns the queues of the given River jobs.
func (q *Queries) RiverJobQueues(ctx context.Context, riverJobIDs []int64) ([]string, error) {
	return collect(ctx, q.db, "queues of River jobs", pgx.RowTo[string],
		`SELECT DISTINCT queue FROM river_job WHERE id = ANY($1)`, riverJobIDs)
}
