package trigger_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"
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

// publisher is a plain AMQP channel on the broker, for messages the
// trigger does not send itself: a flood, a hostile publisher.
func publisher(t *testing.T, url string) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	require.NoError(t, err)
	return ch
}

// counting reads l's notifications until the test ends and counts them
// by payload.
func counting(t *testing.T, l *trigger.Listener) func() map[string]int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	counts := map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			n, err := l.WaitForNotification(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			counts[n.Payload]++
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(counts)
	}
}

// flood publishes n trigger messages for each of queues to the exchange,
// in batches the trigger's queue holds whole (its length is bounded), and
// waits until the trigger has consumed them all.
func flood(t *testing.T, ch *amqp.Channel, reg *prometheus.Registry, exchange string, n int, queues ...string) {
	t.Helper()
	const batch = 400
	start := metric(t, reg, "bpc_queue_trigger_messages_total", "direction", "consumed")
	sent := 0
	for sent < n*len(queues) {
		for i := 0; i < batch && sent < n*len(queues); i++ {
			body := fmt.Sprintf(`{"queue":%q}`, queues[sent%len(queues)])
			require.NoError(t, ch.PublishWithContext(context.Background(), exchange, "jobs.trigger", false, false,
				amqp.Publishing{ContentType: "application/json", Body: []byte(body)}))
			sent++
		}
		require.Eventually(t, func() bool {
			return metric(t, reg, "bpc_queue_trigger_messages_total", "direction", "consumed")-start == float64(sent)
		}, 60*time.Second, 5*time.Millisecond, "the trigger consumed the %d messages sent", sent)
	}
}

// However many trigger messages name a queue, the listener hands River at
// most one insert notification per queue per fetch cooldown: 6000 messages
// for two queues within one cooldown (an hour here) are two notifications,
// one per queue.
func TestTriggerFloodIsOneWakeupPerQueuePerCooldown(t *testing.T) {
	t.Parallel()
	url := testamqp.URL(t)
	exchange := testamqp.Exchange(t, url)
	tr, reg, _ := start(t, trigger.Config{URL: url, Exchange: exchange, RoutingKey: "jobs.trigger", Name: "test", Consume: true})
	require.Eventually(t, tr.Up, 5*time.Second, 10*time.Millisecond)
	l := listen(t, tr)
	l.UseCooldowns(time.Hour, nil)
	counts := counting(t, l)

	flood(t, publisher(t, url), reg, exchange, 3000, "pipeline", "webhooks")
	want := map[string]int{`{"queue":"pipeline"}`: 1, `{"queue":"webhooks"}`: 1}
	require.Eventually(t, func() bool { return maps.Equal(want, counts()) }, 60*time.Second, 5*time.Millisecond,
		"one notification per queue, got %v", counts())
	require.Equal(t, 6000.0, metric(t, reg, "bpc_queue_trigger_messages_total", "direction", "consumed"))
	require.Equal(t, 2.0, metric(t, reg, "bpc_queue_trigger_wakeups_total"))
}

// With a short cooldown, what arrives during one is not lost: one more
// notification follows at its end. The count is bounded by the cooldowns
// that passed (one at the start, one per cooldown since), however many
// messages came; a slow machine only loosens the bound.
func TestTriggerFloodWakesAgainAfterTheCooldown(t *testing.T) {
	t.Parallel()
	const cooldown = 250 * time.Millisecond
	url := testamqp.URL(t)
	exchange := testamqp.Exchange(t, url)
	tr, reg, _ := start(t, trigger.Config{URL: url, Exchange: exchange, RoutingKey: "jobs.trigger", Name: "test", Consume: true})
	require.Eventually(t, tr.Up, 5*time.Second, 10*time.Millisecond)
	l := listen(t, tr)
	l.UseCooldowns(time.Hour, map[string]time.Duration{"pipeline": cooldown})
	counts := counting(t, l)
	const pipeline = `{"queue":"pipeline"}`

	began := time.Now()
	flood(t, publisher(t, url), reg, exchange, 2000, "pipeline")
	require.Eventually(t, func() bool { return counts()[pipeline] >= 2 }, 60*time.Second, 5*time.Millisecond,
		"the messages of the cooldown wake the queue at its end")
	got, elapsed := counts()[pipeline], time.Since(began)
	require.LessOrEqual(t, got, 2+int(elapsed/cooldown), "%d notifications in %s: more than one per cooldown", got, elapsed)
	t.Logf("2000 messages, %d notifications in %s", got, elapsed.Round(time.Millisecond))
}

// checking is a consuming trigger on exchange that checks its exchange
// and binding every 100 ms and reconnects quickly: what the readiness
// tests watch.
func checking(url, exchange string) trigger.Config {
	return trigger.Config{URL: url, Exchange: exchange, RoutingKey: "jobs.trigger", Name: "test", Consume: true,
		CheckInterval: 100 * time.Millisecond, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
}

// A deleted exchange takes the trigger's binding with it: the trigger
// notices (readiness says why, the outage is logged), declares the
// exchange and binds a queue again, and hears messages again.
func TestTriggerNoticesADeletedExchange(t *testing.T) {
	t.Parallel()
	url := testamqp.URL(t)
	exchange := testamqp.Exchange(t, url)
	cfg := checking(url, exchange)
	tr, reg, logs := start(t, cfg)
	require.Eventually(t, tr.Up, 5*time.Second, 10*time.Millisecond)
	l := listen(t, tr)
	ch := publisher(t, url)

	require.NoError(t, ch.ExchangeDelete(exchange, false, false))
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "no longer exists (deleted?)") }, 60*time.Second,
		10*time.Millisecond, "the deleted exchange is noticed")
	require.Equal(t, 1.0, metric(t, reg, "bpc_queue_trigger_outages_total"))
	require.Eventually(t, tr.Up, 60*time.Second, 10*time.Millisecond, "back, with the exchange declared again")
	require.NoError(t, tr.Check(context.Background()))
	publishUntilHeard(t, ch, exchange, l)
}

// publishUntilHeard publishes a trigger message for "exports" until l
// hands it on: the binding works.
func publishUntilHeard(t *testing.T, ch *amqp.Channel, exchange string, l *trigger.Listener) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		require.NoError(t, ch.PublishWithContext(context.Background(), exchange, "jobs.trigger", false, false,
			amqp.Publishing{ContentType: "application/json", Body: []byte(`{"queue":"exports"}`)}))
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		n, err := l.WaitForNotification(ctx)
		cancel()
		if err == nil {
			require.JSONEq(t, `{"queue":"exports"}`, n.Payload)
			return
		}
	}
	t.Fatal("the trigger never heard a message again")
}

// An exchange declared again with another type: readiness says so, with
// what to do, for as long as it lasts — the trigger keeps retrying, and is
// up again once the exchange is put right.
func TestTriggerReportsAnExchangeOfAnotherType(t *testing.T) {
	t.Parallel()
	url := testamqp.URL(t)
	exchange := testamqp.Exchange(t, url)
	cfg := checking(url, exchange)
	tr, _, logs := start(t, cfg)
	require.Eventually(t, tr.Up, 5*time.Second, 10*time.Millisecond)
	l := listen(t, tr)
	ch := publisher(t, url)

	require.NoError(t, ch.ExchangeDelete(exchange, false, false))
	require.NoError(t, ch.ExchangeDeclare(exchange, amqp.ExchangeFanout, true, false, false, false, nil))
	require.Eventually(t, func() bool {
		err := tr.Check(context.Background())
		return err != nil && strings.Contains(err.Error(), "is not a durable direct exchange")
	}, 60*time.Second, 10*time.Millisecond, "readiness names the mismatch")
	require.ErrorContains(t, tr.Check(context.Background()), "QUEUE_UNAVAILABLE")
	// Still retrying: more attempts fail the same way.
	require.Eventually(t, func() bool { return strings.Count(logs.String(), "is not a durable direct exchange") >= 3 },
		60*time.Second, 10*time.Millisecond)
	require.False(t, tr.Up())

	require.NoError(t, ch.ExchangeDelete(exchange, false, false))
	require.Eventually(t, tr.Up, 60*time.Second, 10*time.Millisecond, "up again once the exchange can be declared")
	require.NoError(t, tr.Check(context.Background()))
	publishUntilHeard(t, ch, exchange, l)
}

// The trigger's queue no longer bound (the exchange deleted and declared
// again by someone else between two checks: the same exchange, no
// binding): its probes stop coming back, readiness says so, and the
// trigger binds a queue again.
func TestTriggerNoticesItsQueueUnbound(t *testing.T) {
	t.Parallel()
	url := testamqp.URL(t)
	exchange := testamqp.Exchange(t, url)
	cfg := trigger.Config{URL: url, Exchange: exchange, RoutingKey: "jobs.trigger", Name: "test", Consume: true,
		CheckInterval: time.Second, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
	tr, _, logs := start(t, cfg)
	require.Eventually(t, tr.Up, 5*time.Second, 10*time.Millisecond)
	l := listen(t, tr)
	ch := publisher(t, url)

	// Every failed session logs one line, as the outage or as a failed
	// reconnection.
	failures := func() int {
		return strings.Count(logs.String(), "queue trigger unavailable") + strings.Count(logs.String(), "reconnection failed")
	}
	// Two operations a check or a probe may fall between (then the trigger
	// reports the deleted exchange instead, and binds again): try again
	// until the lost binding itself was noticed.
	for try := 1; !strings.Contains(logs.String(), "no longer receives"); try++ {
		require.LessOrEqual(t, try, 3, "the exchange's deletion was noticed every time, never the lost binding:\n%s", logs.String())
		require.Eventually(t, tr.Up, 60*time.Second, 10*time.Millisecond)
		before := failures()
		require.NoError(t, ch.ExchangeDelete(exchange, false, false))
		require.NoError(t, ch.ExchangeDeclare(exchange, amqp.ExchangeDirect, true, false, false, false, nil))
		require.Eventually(t, func() bool { return failures() > before }, 60*time.Second, 10*time.Millisecond,
			"the lost binding is noticed")
	}
	require.Contains(t, logs.String(), "probes in a row did not come back")
	require.Eventually(t, tr.Up, 60*time.Second, 10*time.Millisecond, "bound again")
	publishUntilHeard(t, ch, exchange, l)
}

// The listener's MinWakeInterval stretches a queue's window past a short
// fetch cooldown (2 ms, as the pipeline's): a flood within it is one
// wake-up.
func TestTriggerWakeIntervalBoundsShortCooldowns(t *testing.T) {
	t.Parallel()
	url := testamqp.URL(t)
	exchange := testamqp.Exchange(t, url)
	tr, reg, _ := start(t, trigger.Config{URL: url, Exchange: exchange, RoutingKey: "jobs.trigger", Name: "test", Consume: true})
	require.Eventually(t, tr.Up, 5*time.Second, 10*time.Millisecond)
	l := listen(t, tr)
	l.UseCooldowns(2*time.Millisecond, nil)
	l.MinWakeInterval = time.Hour
	counts := counting(t, l)

	flood(t, publisher(t, url), reg, exchange, 2000, "pipeline")
	require.Eventually(t, func() bool { return counts()[`{"queue":"pipeline"}`] == 1 }, 60*time.Second, 5*time.Millisecond)
	require.Equal(t, map[string]int{`{"queue":"pipeline"}`: 1}, counts())
}
