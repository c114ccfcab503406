package trigger_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/jobrun/trigger"
	"github.com/bpc-platform/bpc/internal/testamqp"
	"github.com/bpc-platform/bpc/internal/testlog"
	"github.com/bpc-platform/bpc/store"
)

// start runs a trigger on cfg until the test ends; it returns the trigger,
// its registry and its log.
func start(t *testing.T, cfg trigger.Config) (*trigger.Trigger, *prometheus.Registry, *testlog.Buffer) {
	t.Helper()
	tr, reg, logs, _ := startStoppable(t, cfg)
	return tr, reg, logs
}

// startStoppable is start with a stop that cancels the trigger's Run and
// returns what is closed once Run has returned.
func startStoppable(t *testing.T, cfg trigger.Config) (*trigger.Trigger, *prometheus.Registry, *testlog.Buffer, func() <-chan struct{}) {
	t.Helper()
	reg := prometheus.NewRegistry()
	logs := &testlog.Buffer{}
	tr := trigger.New(cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), reg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("trigger log:\n%s", logs.String())
		}
	})
	stop := func() <-chan struct{} {
		cancel()
		return done
	}
	return tr, reg, logs, stop
}

// noControl answers the listener's control poll with nothing.
type noControl struct{}

func (noControl) CancelRequestedJobs(context.Context) ([]store.RiverJobRef, error) { return nil, nil }
func (noControl) RiverQueuesPaused(context.Context) (map[string]bool, error)       { return nil, nil }

// listen returns a listener of tr subscribed to River's insert topic.
func listen(t *testing.T, tr *trigger.Trigger) *trigger.Listener {
	t.Helper()
	l := trigger.NewListener(tr, noControl{}, slog.New(slog.DiscardHandler))
	require.NoError(t, l.Connect(context.Background()))
	require.NoError(t, l.Listen(context.Background(), "river_insert"))
	return l
}

// next waits for the listener's next notification.
func next(t *testing.T, l *trigger.Listener) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := l.WaitForNotification(ctx)
	require.NoError(t, err, "no notification within 5 s")
	require.Equal(t, "river_insert", n.Topic)
	return n.Payload
}

// metric reads a counter or gauge of reg (the first series of name whose
// labels include labels).
func metric(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
				}
				if !found {
					continue next
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s %v", name, labels)
	return 0
}

// Every consuming process hears every publish (each has its own queue),
// as River's insert notification for the queue.
func TestTriggerReachesEveryWorker(t *testing.T) {
	t.Parallel()
	url := testamqp.URL(t)
	cfg := trigger.Config{URL: url, Exchange: testamqp.Exchange(t, url), RoutingKey: "jobs.trigger", Name: "test"}
	pub, pubReg, _ := start(t, cfg)
	cfg.Consume = true
	w1, reg1, _ := start(t, cfg)
	w2, _, _ := start(t, cfg)
	for _, tr := range []*trigger.Trigger{pub, w1, w2} {
		require.Eventually(t, tr.Up, 5*time.Second, 10*time.Millisecond)
	}
	l1, l2 := listen(t, w1), listen(t, w2)

	pub.Publish([]string{"pipeline", "webhooks"})
	got1 := []string{next(t, l1), next(t, l1)}
	got2 := []string{next(t, l2), next(t, l2)}
	for _, got := range [][]string{got1, got2} {
		require.ElementsMatch(t, []string{`{"queue":"pipeline"}`, `{"queue":"webhooks"}`}, got)
	}
	// Each side counts a message after handing it on (to the broker, to the
	// listener), so a count can trail what the listener already received.
	require.Eventually(t, func() bool {
		return metric(t, pubReg, "bpc_queue_trigger_messages_total", "direction", "published") == 2.0 &&
			metric(t, reg1, "bpc_queue_trigger_messages_total", "direction", "consumed") == 2.0
	}, 30*time.Second, 10*time.Millisecond, "the two messages counted as published and as consumed")
	require.Equal(t, 1.0, metric(t, reg1, "bpc_queue_trigger_up"))
}

// The broker going away: the trigger says so (Up, Check, the gauge),
// logs QUEUE_UNAVAILABLE once however many reconnection attempts fail,
// reconnects with backoff when the broker is back, then publishes what was
// committed meanwhile; a second outage is logged again.
func TestTriggerReconnectsAfterOutage(t *testing.T) {
	t.Parallel()
	url := testamqp.URL(t)
	proxy := testamqp.NewProxy(t, url)
	cfg := trigger.Config{URL: proxy.URL(url), Exchange: testamqp.Exchange(t, url), RoutingKey: "jobs.trigger", Name: "test",
		Consume: true, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, StableAfter: 20 * time.Millisecond}
	// A connection that fails sooner than StableAfter after it opened
	// continues the outage before it; one that lasted longer starts a new
	// one. Up turns true after the connection opened, so waiting StableAfter
	// once Up holds makes the next cut a new outage, however fast or slow
	// the machine.
	stable := func() { time.Sleep(2 * cfg.StableAfter) }
	tr, reg, logs := start(t, cfg)
	require.Eventually(t, tr.Up, 5*time.Second, 10*time.Millisecond)
	l := listen(t, tr)
	require.NoError(t, tr.Check(context.Background()))
	require.Equal(t, 1.0, metric(t, reg, "bpc_queue_trigger_up"))

	stable()
	proxy.Cut()
	require.Eventually(t, func() bool { return !tr.Up() }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, 0.0, metric(t, reg, "bpc_queue_trigger_up"))
	err := tr.Check(context.Background())
	require.ErrorContains(t, err, "QUEUE_UNAVAILABLE")
	tr.Publish([]string{"exports"}) // committed during the outage
	// Several attempts fail (backoff 20 ms doubling to 200 ms)...
	require.Eventually(t, func() bool { return strings.Count(logs.String(), "reconnection failed") >= 3 },
		5*time.Second, 10*time.Millisecond)
	// ...and the outage is logged once.
	require.Equal(t, 1, strings.Count(logs.String(), `"error_code":"QUEUE_UNAVAILABLE"`), logs.String())
	require.Equal(t, 1.0, metric(t, reg, "bpc_queue_trigger_outages_total"))

	proxy.Restore()
	require.Eventually(t, tr.Up, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, 1.0, metric(t, reg, "bpc_queue_trigger_up"))
	require.NoError(t, tr.Check(context.Background()))
	require.JSONEq(t, `{"queue":"exports"}`, next(t, l), "the publish of the outage goes out on reconnection")
	require.Contains(t, logs.String(), "queue trigger connected again")

	stable()
	proxy.Cut()
	require.Eventually(t, func() bool {
		return strings.Count(logs.String(), `"error_code":"QUEUE_UNAVAILABLE"`) == 2
	}, 5*time.Second, 10*time.Millisecond, "a second outage is logged again")
	require.Equal(t, 2.0, metric(t, reg, "bpc_queue_trigger_outages_total"))
}

// No broker at the URL: the trigger is down from the start, says so once,
// and never writes the URL (it holds the password) to its log.
func TestTriggerBrokerAbsent(t *testing.T) {
	t.Parallel()
	url := testamqp.ClosedPortURL(t, "amqp://bpc:trigger-secret-password@127.0.0.1:5672/")
	tr, reg, logs := start(t, trigger.Config{URL: url, Exchange: "bpc", RoutingKey: "jobs.trigger", Consume: true,
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	require.Eventually(t, func() bool { return strings.Count(logs.String(), "reconnection failed") >= 3 },
		5*time.Second, 10*time.Millisecond)
	require.False(t, tr.Up())
	require.ErrorContains(t, tr.Check(context.Background()), "connection refused")
	require.Equal(t, 0.0, metric(t, reg, "bpc_queue_trigger_up"))
	require.Equal(t, 1, strings.Count(logs.String(), `"error_code":"QUEUE_UNAVAILABLE"`))
	require.NotContains(t, logs.String(), "trigger-secret-password")
}

// A broker that stops reading the connection (what a resource alarm does
// to a publisher) must not hold the trigger: once its publishes block in
// their writes, stopping it still returns at once, so no broker can hold a
// service's shutdown.
func TestTriggerStopsWhileTheBrokerStopsReading(t *testing.T) {
	t.Parallel()
	url := testamqp.URL(t)
	proxy := testamqp.NewProxy(t, url)
	cfg := trigger.Config{URL: proxy.URL(url), Exchange: testamqp.Exchange(t, url), RoutingKey: "jobs.trigger", Name: "test"}
	tr, reg, _, stop := startStoppable(t, cfg)
	t.Cleanup(proxy.Unstall) // runs before the trigger's cleanup: a failure here must not hang it
	require.Eventually(t, tr.Up, 5*time.Second, 10*time.Millisecond)

	proxy.Stall()
	// 20 MB of messages: more than the socket buffers between the trigger
	// and the stalled proxy hold, so a write blocks.
	const total = 20000
	pad := strings.Repeat("x", 1000)
	names := make([]string, total)
	for i := range names {
		names[i] = fmt.Sprintf("q%d-%s", i, pad)
	}
	tr.Publish(names)
	var published float64
	require.Eventually(t, func() bool {
		before := metric(t, reg, "bpc_queue_trigger_messages_total", "direction", "published")
		time.Sleep(300 * time.Millisecond)
		published = metric(t, reg, "bpc_queue_trigger_messages_total", "direction", "published")
		return published == before && published > 0
	}, 20*time.Second, 10*time.Millisecond, "publishing never stalled")
	require.Less(t, published, float64(total), "a write is blocked")

	stopped := time.Now()
	select {
	case <-stop():
	case <-time.After(5 * time.Second):
		t.Fatal("the trigger did not stop while its write was blocked")
	}
	t.Logf("stopped %s after cancel, %v of %d messages written", time.Since(stopped).Round(time.Millisecond), published, total)
}

// A connection that fails soon after it opened (a broker closing the
// channel at each publish, a flapping network) continues the outage it
// ended: QUEUE_UNAVAILABLE is logged, and counted, once.
func TestTriggerFlappingIsOneOutage(t *testing.T) {
	t.Parallel()
	url := testamqp.URL(t)
	proxy := testamqp.NewProxy(t, url)
	cfg := trigger.Config{URL: proxy.URL(url), Exchange: testamqp.Exchange(t, url), RoutingKey: "jobs.trigger", Name: "test",
		MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
	tr, reg, logs := start(t, cfg)
	require.Eventually(t, tr.Up, 5*time.Second, 10*time.Millisecond)
	for range 3 {
		proxy.Cut()
		require.Eventually(t, func() bool { return !tr.Up() }, 5*time.Second, 10*time.Millisecond)
		proxy.Restore()
		require.Eventually(t, tr.Up, 5*time.Second, 10*time.Millisecond)
	}
	require.Equal(t, 1, strings.Count(logs.String(), `"error_code":"QUEUE_UNAVAILABLE"`), logs.String())
	require.Equal(t, 1.0, metric(t, reg, "bpc_queue_trigger_outages_total"))
}
