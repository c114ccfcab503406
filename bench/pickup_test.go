package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/jobrun"
	"github.com/bpc-platform/bpc/internal/jobrun/trigger"
	"github.com/bpc-platform/bpc/internal/testamqp"
	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

// pickupWorker records when each job starts.
type pickupWorker struct {
	river.WorkerDefaults[noopArgs]
	mu      sync.Mutex
	started map[uuid.UUID]time.Time
}

func (w *pickupWorker) Work(_ context.Context, job *river.Job[noopArgs]) error {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started[job.Args.WorkItemID] = now
	return nil
}

func (w *pickupWorker) startedAt(id uuid.UUID) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.started[id]
	return at, ok
}

// pickupMode is one way River learns of a committed job.
type pickupMode struct {
	name   string
	pool   *pgxpool.Pool
	ins    passport.Inserter
	worker *pickupWorker
	p50    []float64
	p99    []float64
}

// BenchmarkPickupLatency measures how long a committed job waits before a
// worker starts it — commit to Work — with the service's River client in
// three modes: (a) poll-only (BPC_DB_LISTEN=false) with the RabbitMQ
// trigger, (b) poll-only alone, (c) LISTEN/NOTIFY; all three poll every
// second. Each round inserts BPC_BENCH_PICKUP_JOBS jobs (40) per mode, one
// transaction each, 10–40 ms apart, the modes in alternating order; it
// reports each mode's p50 and p99 as min/median/max over the rounds
// (BPC_BENCH_PICKUP_ROUNDS, 5). The trigger's broker is RabbitMQ at
// TEST_AMQP_URL or 127.0.0.1:5672; without one the benchmark fails.
func BenchmarkPickupLatency(b *testing.B) {
	skipUnlessBench(b)
	amqpURL := testamqp.URL(b)
	exchange := testamqp.Exchange(b, amqpURL)
	ctx := context.Background()
	// (a) publishes and consumes through one trigger, as a service of role
	// all does.
	trigCtx, stopTrigger := context.WithCancel(ctx)
	defer stopTrigger()
	trig := trigger.New(trigger.Config{URL: amqpURL, Exchange: exchange, RoutingKey: "jobs.trigger", Name: "bench", Consume: true},
		quiet, prometheus.NewRegistry())
	go trig.Run(trigCtx)
	require.Eventually(b, trig.Up, 10*time.Second, 10*time.Millisecond, "the trigger does not connect")

	// newMode starts a client over a schema of its own: the service's
	// client options, polling every second, with the trigger when trig is
	// set.
	newMode := func(name string, pollOnly bool, trig *trigger.Trigger) *pickupMode {
		m := &pickupMode{name: name, pool: schemaPool(b, true), worker: &pickupWorker{started: map[uuid.UUID]time.Time{}}}
		opts := jobrun.ClientOptions{ID: "bench-" + name, PollInterval: time.Second, FetchCooldown: 10 * time.Millisecond,
			ExtraQueues: []string{benchQueue}, PollOnly: pollOnly, RiverFetch: riverFetch()}
		var pub passport.Publisher
		if trig != nil {
			opts.Listener, pub = trigger.NewListener(trig, store.New(m.pool), quiet), trig
		}
		client, _ := testriver.Start(b, m.pool, testriver.Options{
			Client:   opts,
			Deps:     workers.Deps{Logger: quiet},
			Register: func(w *river.Workers, _ workers.Deps) { river.AddWorker(w, m.worker) },
		})
		m.ins = passport.Publishing(client, pub)
		return m
	}
	modes := []*pickupMode{
		newMode("poll-only+trigger", true, trig),
		newMode("poll-only", true, nil),
		newMode("listen-notify", false, nil),
	}

	n := envInt("BPC_BENCH_PICKUP_JOBS", 40)
	rounds := envInt("BPC_BENCH_PICKUP_ROUNDS", 5)
	time.Sleep(2 * time.Second) // every client has started, elected, listened
	for b.Loop() {
		for r := range rounds {
			for i := range modes {
				m := modes[(i+r)%len(modes)] // alternate which mode goes first
				lat := m.round(b, ctx, n)
				m.p50 = append(m.p50, ms(percentileOf(lat, 0.50)))
				m.p99 = append(m.p99, ms(percentileOf(lat, 0.99)))
			}
		}
	}
	// One line per mode: go test keeps ten lines of a benchmark's log.
	b.Logf("commit → start, %d rounds of %d jobs per mode, %s, ms min/median/max over the rounds:", rounds, n, fetchName())
	for _, m := range modes {
		line := fmt.Sprintf("%-17s", m.name)
		for _, q := range []struct {
			name string
			xs   []float64
		}{{"p50", m.p50}, {"p99", m.p99}} {
			xs := slices.Sorted(slices.Values(q.xs))
			b.ReportMetric(median(xs), fmt.Sprintf("%s-%s-median-ms", m.name, q.name))
			line += fmt.Sprintf("  %s %.1f / %.1f / %.1f", q.name, xs[0], median(xs), xs[len(xs)-1])
		}
		b.Log(line)
	}
}

// round inserts n jobs, each in its own committed transaction, and returns
// each one's wait from commit to start.
func (m *pickupMode) round(b *testing.B, ctx context.Context, n int) []time.Duration {
	b.Helper()
	ids := make([]uuid.UUID, n)
	committed := make([]time.Time, n)
	for i := range n {
		ids[i] = uuid.New()
		ins := passport.NewTxInserter(m.ins)
		require.NoError(b, pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error {
			_, err := ins.InsertManyTx(ctx, tx, []river.InsertManyParams{{
				Args: noopArgs{TenantID: store.DevTenantID, WorkItemID: ids[i]}, InsertOpts: &river.InsertOpts{Queue: benchQueue}}})
			return err
		}))
		committed[i] = time.Now()
		ins.Committed()
		time.Sleep(time.Duration(10+rand.IntN(31)) * time.Millisecond)
	}
	lat := make([]time.Duration, n)
	deadline := time.Now().Add(30 * time.Second)
	for i, id := range ids {
		for {
			if at, ok := m.worker.startedAt(id); ok {
				lat[i] = at.Sub(committed[i])
				break
			}
			require.True(b, time.Now().Before(deadline), "%s: job %d never started", m.name, i)
			time.Sleep(5 * time.Millisecond)
		}
	}
	return lat
}

// percentileOf is the q-quantile of durations (nearest rank).
func percentileOf(d []time.Duration, q float64) time.Duration {
	s := slices.Sorted(slices.Values(d))
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
