package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/store"
)

// Due work is what a tick must wait for: this worker's running jobs and the
// jobs due now in the given queues, nothing in another queue, in the
// future, another worker's, or in a paused queue.
func TestDueWorkExists(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := testdb.New(t)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	q := store.New(pool).WithTx(tx)
	queues := []string{"pipeline", "webhooks"}

	due := func() bool {
		t.Helper()
		ok, err := q.DueWorkExists(ctx, queues, "w1")
		require.NoError(t, err)
		return ok
	}
	// insert adds one job in a savepoint that undo rolls back.
	insert := func(t *testing.T, queue, state, attemptedBy, scheduledAt string) (undo func()) {
		t.Helper()
		sp, err := tx.Begin(ctx)
		require.NoError(t, err)
		_, err = sp.Exec(ctx, `INSERT INTO river_job (args, kind, max_attempts, priority, queue, state,
				attempt, attempted_at, attempted_by, scheduled_at, finalized_at)
			VALUES ('{"tenant_id":"`+store.DevTenantID.String()+`"}', 'DELIVER_WEBHOOK', 5, 4, $1, $2::river_job_state,
				CASE WHEN $3::text[] IS NULL THEN 0 ELSE 1 END,
				CASE WHEN $3::text[] IS NULL THEN NULL ELSE now() END, $3::text[], $4::timestamptz,
				CASE WHEN $2::river_job_state IN ('completed', 'cancelled', 'discarded') THEN now() END)`,
			queue, state, nilIfEmpty(attemptedBy), scheduledAt)
		require.NoError(t, err)
		return func() { require.NoError(t, sp.Rollback(ctx)) }
	}

	require.False(t, due(), "no jobs at all")
	cases := []struct {
		name                    string
		queue, state, by, sched string
		want                    bool
	}{
		{"available now", "pipeline", "available", "", "now", true},
		{"scheduled and come", "webhooks", "scheduled", "", "-infinity", true},
		{"retryable and come", "pipeline", "retryable", "{w1}", "-infinity", true},
		{"running here", "pipeline", "running", "{w2,w1}", "-infinity", true},
		{"another queue", "maintenance", "available", "", "now", false},
		{"scheduled later", "pipeline", "scheduled", "", "infinity", false},
		{"retryable later", "pipeline", "retryable", "{w1}", "infinity", false},
		{"running on another worker", "pipeline", "running", "{w1,w2}", "-infinity", false},
		{"finished", "pipeline", "completed", "{w1}", "-infinity", false},
	}
	for _, c := range cases {
		undo := insert(t, c.queue, c.state, c.by, c.sched)
		require.Equal(t, c.want, due(), c.name)
		undo()
	}

	// A paused queue's due jobs are not waited for.
	_ = insert(t, "pipeline", "available", "", "now")
	require.True(t, due())
	_, err = tx.Exec(ctx, `INSERT INTO river_queue (name, created_at, metadata, paused_at, updated_at)
		VALUES ('pipeline', now(), '{}', now(), now())`)
	require.NoError(t, err)
	require.False(t, due(), "paused queue")
}

// nilIfEmpty is nil for "", else s: a NULL array rather than an empty one.
func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
