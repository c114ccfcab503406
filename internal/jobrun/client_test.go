package jobrun

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/jobargs"
)

func TestPipelineQueueFetchesWithItsOwnCooldown(t *testing.T) {
	t.Parallel()
	o := ClientOptions{Work: true, Concurrency: 10, PollInterval: time.Second, FetchCooldown: 10 * time.Millisecond,
		PipelineFetchCooldown: 2 * time.Millisecond, PipelinePollInterval: 100 * time.Millisecond,
		Maintenance: &MaintenanceConfig{}}
	cfg := riverConfig(o)
	// River sends insert notifications at most once per queue per
	// client-wide cooldown: the pipeline's, or its steps' would be dropped.
	require.Equal(t, 2*time.Millisecond, cfg.FetchCooldown)
	require.Equal(t, 2*time.Millisecond, cfg.Queues[jobargs.QueuePipeline].FetchCooldown)
	require.Equal(t, 100*time.Millisecond, cfg.Queues[jobargs.QueuePipeline].FetchPollInterval)
	for name, q := range cfg.Queues {
		if name != jobargs.QueuePipeline {
			require.Equal(t, 10*time.Millisecond, q.FetchCooldown, "queue %s", name)
			require.Zero(t, q.FetchPollInterval, "queue %s polls at the client's interval", name)
		}
	}

	// A pipeline cooldown no shorter than the others' changes nothing.
	o.PipelineFetchCooldown = 50 * time.Millisecond
	cfg = riverConfig(o)
	require.Equal(t, 10*time.Millisecond, cfg.FetchCooldown)
	for name, q := range cfg.Queues {
		require.Equal(t, 10*time.Millisecond, q.FetchCooldown, "queue %s", name)
	}

	// An insert-only client (the API role) notifies by the pipeline's window too.
	o.Work, o.PipelineFetchCooldown = false, 2*time.Millisecond
	cfg = riverConfig(o)
	require.Equal(t, 2*time.Millisecond, cfg.FetchCooldown)
	require.Empty(t, cfg.Queues)
}

// A queue with a per-tenant cap polls every CappedQueuePollInterval: a
// fetch the cap cut short does not make River fetch again when a job ends.
func TestCappedQueuePollsOften(t *testing.T) {
	t.Parallel()
	o := ClientOptions{Work: true, Concurrency: 10, PollInterval: time.Second, FetchCooldown: 10 * time.Millisecond,
		TenantCaps: map[string]int{jobargs.QueueWebhooks: 4}}
	cfg := riverConfig(o)
	require.Equal(t, CappedQueuePollInterval, cfg.Queues[jobargs.QueueWebhooks].FetchPollInterval)
	require.Zero(t, cfg.Queues[jobargs.QueueExports].FetchPollInterval, "an uncapped queue polls at the client's interval")

	// A client polling faster anyway, or on River's own fetch, keeps its own.
	o.PollInterval = 50 * time.Millisecond
	require.Zero(t, riverConfig(o).Queues[jobargs.QueueWebhooks].FetchPollInterval)
	o.PollInterval, o.RiverFetch = time.Second, true
	require.Zero(t, riverConfig(o).Queues[jobargs.QueueWebhooks].FetchPollInterval)
}

// ExtraQueuePollInterval sets the extra queues' poll only: the benchmarks'
// queue polls as River's benchmark does, the service's own at its interval.
func TestExtraQueuesPollAtTheirOwnInterval(t *testing.T) {
	t.Parallel()
	o := ClientOptions{Work: true, Concurrency: 10, PollInterval: time.Second, FetchCooldown: 2 * time.Millisecond,
		ExtraQueues: []string{"bench"}, ExtraQueuePollInterval: 20 * time.Millisecond}
	cfg := riverConfig(o)
	require.Equal(t, 20*time.Millisecond, cfg.Queues["bench"].FetchPollInterval)
	for _, q := range jobargs.Queues {
		require.Zero(t, cfg.Queues[q].FetchPollInterval, "queue %s polls at the client's interval", q)
	}

	// Never below the cooldown (River rejects a poll shorter than it).
	o.ExtraQueuePollInterval = time.Millisecond
	require.Equal(t, 2*time.Millisecond, riverConfig(o).Queues["bench"].FetchPollInterval)
}
