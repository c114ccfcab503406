package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/internal/testnet"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// endpointFor creates tenant's endpoint for url subscribed to eventType.
func (h *harness) endpointFor(tenant, url, eventType string) uuid.UUID {
	h.t.Helper()
	var ep struct {
		WebhookEndpointID uuid.UUID `json:"webhook_endpoint_id"`
	}
	require.Equal(h.t, http.StatusCreated, h.call(http.MethodPost, "/v1/webhook-endpoints",
		map[string]any{"tenant_id": tenant, "url": url, "secret": testSecret}, &ep))
	require.Equal(h.t, http.StatusCreated, h.call(http.MethodPost, "/v1/webhook-subscriptions",
		map[string]any{"tenant_id": tenant, "webhook_endpoint_id": ep.WebhookEndpointID, "event_type": eventType}, nil))
	return ep.WebhookEndpointID
}

// waitJobOf waits for tenant's job to end, failing the test after within.
func (h *harness) waitJobOf(tenant string, jobID uuid.UUID, within time.Duration) bpctype.Job {
	h.t.Helper()
	deadline := time.Now().Add(within)
	for {
		var job bpctype.Job
		status := h.call(http.MethodGet, "/v1/jobs/"+jobID.String()+"?tenant_id="+tenant+"&wait_ms=1000", nil, &job)
		if status == http.StatusOK {
			return job
		}
		require.Equal(h.t, http.StatusAccepted, status)
		require.True(h.t, time.Now().Before(deadline), "job %s still %s after %s", jobID, job.Status, within)
	}
}

// countJobs counts tenant's jobs of type in status.
func (h *harness) countJobs(tenant, typ, status string) int {
	h.t.Helper()
	var n int
	require.NoError(h.t, h.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM jobs_live WHERE tenant_id = $1 AND type = $2 AND status = $3`, tenant, typ, status).Scan(&n))
	return n
}

// TestNoisyNeighbour is issue 23's acceptance scenario. Tenant A floods the
// pipeline queue with 3000 BUILD_SNAPSHOT jobs and points 20 webhook
// endpoints at a tarpit; tenant B then builds a snapshot and pings its
// endpoint. Bounds are did-not-hang bounds (60 s); what the test holds the
// service to is behaviour: B's build ends while A's backlog is still mostly
// queued (River's own first-come order would run all of A's first), B's
// ping ends while A's deliveries are still held or waiting, and A never
// has more deliveries running than BPC_WEBHOOK_TENANT_CONCURRENCY (4).
func TestNoisyNeighbour(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, map[string]string{
		// The per-tenant request budget (where it exists) would spread
		// the flood over seconds; the flood is the point here.
		"BPC_TENANT_RATE_LIMIT_RPS":   "100000",
		"BPC_TENANT_RATE_LIMIT_BURST": "100000",
	})
	ctx := context.Background()
	noisy, quiet := h.newTenant(), h.newTenant()

	// B's endpoint answers at once.
	recv := newReceiver(t, http.StatusOK)
	quietEndpoint := h.endpointFor(quiet, recv.URL, "quiet.only")

	// A's 20 endpoints (distinct URLs, one tarpit), each subscribed to
	// every event: one event of A's is 20 deliveries that hang.
	tarpit := testnet.Tarpit(t)
	for i := range 20 {
		h.endpointFor(noisy, fmt.Sprintf("http://%s/hook/%d", tarpit, i), "*")
	}

	// A's 3000 snapshots to build (set up in the store: the flood is the
	// jobs, not the snapshots).
	noisyID := uuid.MustParse(noisy)
	snapshots := make([]uuid.UUID, 0, 3000)
	require.NoError(t, store.New(h.pool).InTx(ctx, func(tx pgx.Tx) error {
		for range 3000 {
			sn, err := store.New(h.pool).WithTx(tx).CreateSnapshot(ctx, noisyID)
			if err != nil {
				return err
			}
			snapshots = append(snapshots, sn.SnapshotID)
		}
		return nil
	}))

	// How many of A's deliveries run at once, sampled until the test ends.
	var mostRunning atomic.Int64
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for sampleCtx.Err() == nil {
			var n int64
			if h.pool.QueryRow(sampleCtx, `SELECT count(*) FROM jobs_live WHERE tenant_id = $1 AND type = $2 AND status = 'RUNNING'`,
				noisy, jobargs.KindDeliverWebhook).Scan(&n) == nil && n > mostRunning.Load() {
				mostRunning.Store(n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	defer func() { stopSampling(); <-sampled }()

	// The flood: five events (100 deliveries to the tarpit), then the 3000
	// builds in three batches of 1000, as fast as the API takes them.
	for range 5 {
		var ev eventResponse
		require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/events", map[string]any{
			"tenant_id": noisy, "aggregate_type": "Passport", "aggregate_id": uuid.NewString(),
			"event_type": "noisy.event", "payload": map[string]any{}}, &ev))
		require.Len(t, ev.Deliveries, 20)
	}
	for start := 0; start < len(snapshots); start += 1000 {
		items := make([]map[string]any, 0, 1000)
		for _, id := range snapshots[start : start+1000] {
			items = append(items, map[string]any{"type": jobargs.KindBuildSnapshot, "tenant_id": noisy,
				"payload": map[string]any{"snapshot_id": id}})
		}
		status, raw := h.raw(http.MethodPost, "/v1/jobs:batch", map[string]any{"jobs": items},
			map[string]string{"Authorization": "Bearer " + testToken})
		require.Equal(t, http.StatusCreated, status, "%s", raw)
	}

	// B builds a snapshot: it ends within the bound, and before A's
	// backlog does. River's order would start it after every one of A's
	// 3000; with a fair share it takes the next free worker.
	var sn bpctype.Snapshot
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/snapshots", map[string]any{"tenant_id": quiet}, &sn))
	var built struct {
		Job bpctype.Job `json:"job"`
	}
	require.Equal(t, http.StatusAccepted, h.call(http.MethodPost, "/v1/snapshots/"+sn.SnapshotID.String()+"/build",
		map[string]any{"tenant_id": quiet}, &built))
	require.Equal(t, bpctype.StatusSucceeded, h.waitJobOf(quiet, built.Job.JobID, 60*time.Second).Status)
	queued := h.countJobs(noisy, jobargs.KindBuildSnapshot, bpctype.StatusQueued)
	require.Greater(t, queued, 1000, "B's build ended after A's backlog had (nearly) drained: %d of A's 3000 builds still queued", queued)

	// B pings its endpoint: it is delivered within the bound while A's
	// deliveries to the tarpit are still held or waiting their turn.
	var ping struct {
		JobID uuid.UUID `json:"job_id"`
	}
	require.Equal(t, http.StatusAccepted, h.call(http.MethodPost,
		"/v1/webhook-endpoints/"+quietEndpoint.String()+"/ping?tenant_id="+quiet, nil, &ping))
	require.Equal(t, bpctype.StatusSucceeded, h.waitJobOf(quiet, ping.JobID, 60*time.Second).Status)
	require.Len(t, recv.received(), 1)
	pending := h.countJobs(noisy, jobargs.KindDeliverWebhook, bpctype.StatusQueued) +
		h.countJobs(noisy, jobargs.KindDeliverWebhook, bpctype.StatusRunning)
	require.Greater(t, pending, 50, "A's 100 deliveries to the tarpit should still be mostly pending")

	stopSampling()
	<-sampled
	most := mostRunning.Load()
	require.LessOrEqual(t, most, int64(4), "A had %d deliveries running at once; BPC_WEBHOOK_TENANT_CONCURRENCY is 4", most)
	require.Positive(t, most, "A's deliveries never ran: the cap was not exercised")
}
