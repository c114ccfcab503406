package workers_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/jobrun"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/testlog"
	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/internal/webhook/breaker"
	"github.com/bpc-platform/bpc/internal/webhook/destination"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

const secret = "whsec-worker-test-0123456789"

// received is one request the endpoint saw.
type received struct {
	header http.Header
	body   []byte
}

// endpointServer answers each path with a fixed status — /flaky with one
// that can be changed (500 at first) — and records requests.
type endpointServer struct {
	*httptest.Server
	flaky    atomic.Int32
	mu       sync.Mutex
	requests map[string][]received
}

func newEndpointServer(t *testing.T) *endpointServer {
	s := &endpointServer{requests: map[string][]received{}}
	s.flaky.Store(http.StatusInternalServerError)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.requests[r.URL.Path] = append(s.requests[r.URL.Path], received{header: r.Header.Clone(), body: body})
		s.mu.Unlock()
		switch r.URL.Path {
		case "/ok":
			w.Header().Set("X-Receiver", "yes")
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte("thanks"))
		case "/flaky":
			w.WriteHeader(int(s.flaky.Load()))
		case "/bad-request":
			w.WriteHeader(http.StatusBadRequest)
		case "/redirect":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/too-many":
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *endpointServer) seen(path string) []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.requests[path]...)
}

func (s *endpointServer) count(path string) int { return len(s.seen(path)) }

// delivery returns the X-BPC-Delivery-Id of the i-th request to path.
func (s *endpointServer) delivery(path string, i int) string {
	return s.seen(path)[i].header.Get(workers.HeaderDeliveryID)
}

// webhookOptions configure newWebhookEnv.
type webhookOptions struct {
	// maxAttempts is the client's default.
	maxAttempts int
	// client sends the webhooks; workers.NewHTTPClient when nil.
	client *http.Client
	// breaker tunes the endpoints' circuit breaker.
	breaker breaker.Config
	// timeout is the total of one POST (testriver's default when zero).
	timeout time.Duration
}

// webhookEnv runs the service's workers over a per-test schema, logging as
// JSON to logs.
type webhookEnv struct {
	env
	metrics *workers.Metrics
	logs    *testlog.Buffer
}

func newWebhookEnv(t *testing.T, o webhookOptions) webhookEnv {
	t.Helper()
	logs := &testlog.Buffer{}
	client, d := testriver.Start(t, testdb.New(t), testriver.Options{
		Client: jobrun.ClientOptions{ID: "worker-test", MaxAttempts: o.maxAttempts},
		Deps: workers.Deps{Logger: slog.New(slog.NewJSONHandler(logs, nil)), HTTPClient: o.client, WebhookBreaker: o.breaker,
			WebhookTimeout: o.timeout},
	})
	return webhookEnv{env: env{Ctx: t.Context(), Store: d.Store, Client: client}, metrics: d.Metrics, logs: logs}
}

func (e webhookEnv) endpoint(t *testing.T, url string) uuid.UUID {
	t.Helper()
	ep, err := e.Store.CreateWebhookEndpoint(e.Ctx, store.DevTenantID, url, secret)
	require.NoError(t, err)
	return ep.WebhookEndpointID
}

// appendEvent appends an event delivered to the endpoint.
func (e webhookEnv) appendEvent(t *testing.T, endpointID uuid.UUID) (bpctype.Event, bpctype.DeliveryRef) {
	t.Helper()
	var res passport.AppendResult
	require.NoError(t, e.Store.InTx(e.Ctx, func(tx pgx.Tx) error {
		var err error
		res, err = passport.NewTx(tx, e.Client, "").AppendEvent(e.Ctx, passport.EventInput{
			TenantID: store.DevTenantID, AggregateType: "passport", AggregateID: uuid.New(),
			EventType: "passport.activated", Payload: json.RawMessage(`{"passport_id":"p-1"}`), DeliverTo: &endpointID,
		})
		return err
	}))
	require.Len(t, res.Deliveries, 1)
	return res.Event, res.Deliveries[0]
}

// deliver appends an event delivered to the endpoint.
func (e webhookEnv) deliver(t *testing.T, endpointID uuid.UUID) bpctype.DeliveryRef {
	t.Helper()
	_, ref := e.appendEvent(t, endpointID)
	return ref
}

// deliverTo creates an endpoint at url and appends an event delivered to it.
func (e webhookEnv) deliverTo(t *testing.T, url string) (bpctype.Event, bpctype.DeliveryRef) {
	t.Helper()
	return e.appendEvent(t, e.endpoint(t, url))
}

func (e webhookEnv) delivery(t *testing.T, id uuid.UUID) bpctype.WebhookDelivery {
	t.Helper()
	d, err := e.Store.GetWebhookDelivery(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	return d
}

func TestDeliverWebhookWorker(t *testing.T) {
	t.Parallel()
	srv := newEndpointServer(t)
	e := newWebhookEnv(t, webhookOptions{maxAttempts: 2})

	okEvent, okRef := e.deliverTo(t, srv.URL+"/ok")
	_, badRef := e.deliverTo(t, srv.URL+"/bad-request")
	_, redirectRef := e.deliverTo(t, srv.URL+"/redirect")
	_, failingRef := e.deliverTo(t, srv.URL+"/server-error")
	_, throttledRef := e.deliverTo(t, srv.URL+"/too-many")

	t.Run("2xx delivers a signed BPC-WH-1 request", func(t *testing.T) {
		job := e.Wait(t, okRef.JobID)
		require.Equal(t, bpctype.StatusSucceeded, job.Status)
		d := e.delivery(t, okRef.WebhookDeliveryID)
		require.Equal(t, bpctype.DeliveryDelivered, d.Status)
		require.Equal(t, int32(http.StatusAccepted), *d.HTTPStatus)
		require.NotNil(t, d.DeliveredAt)
		require.Equal(t, []byte("thanks"), d.ResponseBody)
		var headers map[string]string
		require.NoError(t, json.Unmarshal(d.ResponseHeaders, &headers))
		require.Equal(t, "yes", headers["X-Receiver"])

		reqs := srv.seen("/ok")
		require.Len(t, reqs, 1)
		stored, err := e.Store.GetEvent(e.Ctx, store.DevTenantID, okEvent.EventID)
		require.NoError(t, err)
		wantBody, err := workers.Body(stored)
		require.NoError(t, err)
		require.Equal(t, wantBody, reqs[0].body)
		require.Equal(t, workers.Sign([]byte(secret), reqs[0].body), reqs[0].header.Get(workers.HeaderSignature))
		require.Equal(t, "passport.activated", reqs[0].header.Get(workers.HeaderEventType))
		require.Equal(t, okRef.WebhookDeliveryID.String(), reqs[0].header.Get(workers.HeaderDeliveryID))
		require.Equal(t, "application/json", reqs[0].header.Get("Content-Type"))
	})

	t.Run("4xx fails at once", func(t *testing.T) {
		job := e.Wait(t, badRef.JobID)
		require.Equal(t, bpctype.StatusFailed, job.Status)
		require.Equal(t, int32(1), job.Attempts, "a 4xx is not retried")
		require.Equal(t, "WEBHOOK_4XX", lastJobError(t, job).Code)
		d := e.delivery(t, badRef.WebhookDeliveryID)
		require.Equal(t, bpctype.DeliveryFailed, d.Status)
		require.Equal(t, int32(http.StatusBadRequest), *d.HTTPStatus)
		require.Equal(t, "WEBHOOK_4XX", *d.ErrorCode)
	})

	// A redirect is its own outcome, WEBHOOK_3XX: not followed (the signed
	// body must not go where the receiver points), not retried (the
	// registered URL is wrong, as with a 4xx), and the Location it names
	// is kept for the tenant to see.
	t.Run("redirects are WEBHOOK_3XX, not followed", func(t *testing.T) {
		job := e.Wait(t, redirectRef.JobID)
		require.Equal(t, bpctype.StatusFailed, job.Status)
		require.Equal(t, int32(1), job.Attempts, "a redirect is not retried")
		require.Equal(t, "WEBHOOK_3XX", lastJobError(t, job).Code)
		d := e.delivery(t, redirectRef.WebhookDeliveryID)
		require.Equal(t, bpctype.DeliveryFailed, d.Status)
		require.Equal(t, "WEBHOOK_3XX", *d.ErrorCode)
		require.Equal(t, int32(http.StatusFound), *d.HTTPStatus)
		require.Contains(t, *d.ErrorMessage, "redirects are not followed")
		var headers map[string]string
		require.NoError(t, json.Unmarshal(d.ResponseHeaders, &headers))
		require.Equal(t, "/ok", headers["Location"])
		require.Len(t, srv.seen("/redirect"), 1)
		e.Wait(t, okRef.JobID)
		require.Len(t, srv.seen("/ok"), 1, "only the delivery to /ok reached /ok: the Location was not followed")
		require.Equal(t, 1.0, testutil.ToFloat64(e.metrics.WebhookOutcomes.WithLabelValues("WEBHOOK_3XX")))
		require.Equal(t, 1.0, testutil.ToFloat64(e.metrics.WebhookOutcomes.WithLabelValues("WEBHOOK_4XX")), "the 400, not the 302")
	})

	t.Run("5xx is retried then dead-lettered", func(t *testing.T) {
		job := e.Wait(t, failingRef.JobID)
		require.Equal(t, bpctype.StatusDeadLetter, job.Status)
		require.Equal(t, int32(2), job.Attempts)
		require.Equal(t, "WEBHOOK_5XX", lastJobError(t, job).Code)
		require.Len(t, srv.seen("/server-error"), 2)
		d := e.delivery(t, failingRef.WebhookDeliveryID)
		require.Equal(t, bpctype.DeliveryFailed, d.Status, "the last attempt fails the delivery")
		require.Equal(t, int32(2), d.Attempts)
	})

	t.Run("429 is retried like a 5xx", func(t *testing.T) {
		job := e.Wait(t, throttledRef.JobID)
		require.Equal(t, bpctype.StatusDeadLetter, job.Status)
		require.Len(t, srv.seen("/too-many"), 2)
	})

	require.Equal(t, 2.0, testutil.ToFloat64(e.metrics.DeadLetter.WithLabelValues("DELIVER_WEBHOOK")))
	e.Consistent(t)
}

func TestDeliverWebhookWorkerInactiveEndpointFailsWithoutPosting(t *testing.T) {
	t.Parallel()
	srv := newEndpointServer(t)
	e := newWebhookEnv(t, webhookOptions{maxAttempts: 3})
	// The endpoint is deactivated before its delivery is enqueued.
	ep := e.endpoint(t, srv.URL+"/ok")
	inactive := false
	_, err := e.Store.UpdateWebhookEndpoint(e.Ctx, store.DevTenantID, ep, "", &inactive)
	require.NoError(t, err)
	ref := e.deliver(t, ep)

	job := e.Wait(t, ref.JobID)
	require.Equal(t, bpctype.StatusFailed, job.Status)
	require.Equal(t, "INVALID_STATE", lastJobError(t, job).Code)
	d := e.delivery(t, ref.WebhookDeliveryID)
	require.Equal(t, bpctype.DeliveryFailed, d.Status)
	require.Equal(t, "INVALID_STATE", *d.ErrorCode)
	require.Empty(t, srv.seen("/ok"), "nothing is sent to an inactive endpoint")
}

// With private destinations refused, a delivery to an endpoint that points
// inside — stored before the policy, or whose name now resolves inside —
// fails at once with WEBHOOK_DESTINATION_DENIED, nothing reaches the
// address, and the delivery records no response.
func TestDeliverWebhookWorkerDeniedDestination(t *testing.T) {
	t.Parallel()
	srv := newEndpointServer(t)
	e := newWebhookEnv(t, webhookOptions{maxAttempts: 3, client: workers.NewPolicyHTTPClient(&destination.Policy{})})
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	for _, url := range []string{
		srv.URL + "/ok", // 127.0.0.1, refused before resolving
		fmt.Sprintf("http://localhost:%d/ok", port),          // a localhost name
		fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/ok", port), // IPv4-mapped
		fmt.Sprintf("http://2130706433:%d/ok", port),         // a numeric spelling
	} {
		_, ref := e.deliverTo(t, url)
		job := e.Wait(t, ref.JobID)
		require.Equal(t, bpctype.StatusFailed, job.Status, url)
		require.Equal(t, int32(1), job.Attempts, "%s: not retried", url)
		le := lastJobError(t, job)
		require.Equal(t, "WEBHOOK_DESTINATION_DENIED", le.Code, url)
		require.NotContains(t, le.Message, "127.0.0.1", "the delivery does not echo the address")
		d := e.delivery(t, ref.WebhookDeliveryID)
		require.Equal(t, bpctype.DeliveryFailed, d.Status)
		require.Equal(t, "WEBHOOK_DESTINATION_DENIED", *d.ErrorCode)
		require.Nil(t, d.HTTPStatus)
		require.Empty(t, d.ResponseBody)
		require.True(t, len(d.ResponseHeaders) == 0 || string(d.ResponseHeaders) == "null" || string(d.ResponseHeaders) == "{}", "%s", d.ResponseHeaders)
	}
	require.Empty(t, srv.seen("/ok"), "nothing was sent")
	e.Consistent(t)
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// Every way of failing to reach an endpoint — two different closed ports, a
// TLS handshake with a plain-HTTP server, a connection closed before any
// answer — reads the same in the delivery and the job, so that deliveries
// cannot map what the service can reach.
func TestDeliverWebhookConnectErrorsAreUniform(t *testing.T) {
	t.Parallel()
	srv := newEndpointServer(t)
	hangUp, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = hangUp.Close() })
	go func() {
		for {
			c, err := hangUp.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	e := newWebhookEnv(t, webhookOptions{maxAttempts: 1})

	urls := []string{
		fmt.Sprintf("http://127.0.0.1:%d/hook", closedPort(t)),
		fmt.Sprintf("http://127.0.0.1:%d/hook", closedPort(t)),
		strings.Replace(srv.URL, "http://", "https://", 1) + "/ok",
		"http://" + hangUp.Addr().String() + "/hook",
	}
	var messages, deliveryMessages []string
	for _, url := range urls {
		_, ref := e.deliverTo(t, url)
		job := e.Wait(t, ref.JobID)
		le := lastJobError(t, job)
		require.Equal(t, "WEBHOOK_NETWORK", le.Code, url)
		d := e.delivery(t, ref.WebhookDeliveryID)
		require.Equal(t, "WEBHOOK_NETWORK", *d.ErrorCode, url)
		require.Nil(t, d.HTTPStatus)
		messages, deliveryMessages = append(messages, le.Message), append(deliveryMessages, *d.ErrorMessage)
	}
	for i := range urls {
		require.Equal(t, "could not connect to the webhook endpoint", messages[i], urls[i])
		require.Equal(t, "could not connect to the webhook endpoint", deliveryMessages[i], urls[i])
	}
	require.Empty(t, srv.seen("/ok"), "the TLS handshake never became a request")
}

// --- the circuit breaker ---

// transitions returns the breaker transition log lines.
func (e webhookEnv) transitions(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if !strings.Contains(line, "webhook breaker transition") {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		out = append(out, m)
	}
	return out
}

func (e webhookEnv) breaker(t *testing.T, endpointID uuid.UUID) bpctype.WebhookBreaker {
	t.Helper()
	b, err := e.Store.GetWebhookBreaker(e.Ctx, store.DevTenantID, endpointID)
	require.NoError(t, err)
	return b
}

func (e webhookEnv) waitState(t *testing.T, endpointID uuid.UUID, state string, cond func(bpctype.WebhookBreaker) bool) bpctype.WebhookBreaker {
	t.Helper()
	var b bpctype.WebhookBreaker
	require.Eventually(t, func() bool {
		b = e.breaker(t, endpointID)
		return b.State == state && (cond == nil || cond(b))
	}, 15*time.Second, 5*time.Millisecond, "breaker never reached %s", state)
	return b
}

// settledAttempts waits until none of the jobs runs and returns their SSOT attempts.
func (e webhookEnv) settledAttempts(t *testing.T, refs []bpctype.DeliveryRef) map[uuid.UUID]int32 {
	t.Helper()
	out := map[uuid.UUID]int32{}
	require.Eventually(t, func() bool {
		for _, ref := range refs {
			j := e.Job(t, ref.JobID)
			if j.Status != bpctype.StatusQueued {
				return false
			}
			out[ref.JobID] = j.Attempts
		}
		return true
	}, 10*time.Second, 5*time.Millisecond)
	return out
}

func (e webhookEnv) snoozes(t *testing.T, jobID uuid.UUID) int {
	t.Helper()
	return e.Count(t, `SELECT COALESCE((metadata->>'snoozes')::int, 0) FROM river_job
		WHERE id = (SELECT river_job_id FROM jobs WHERE job_id = $1)`, jobID)
}

func TestWebhookBreakerHoldsProbesAndRecovers(t *testing.T) {
	t.Parallel()
	const cooldown = 1500 * time.Millisecond
	srv := newEndpointServer(t)
	e := newWebhookEnv(t, webhookOptions{maxAttempts: 25, breaker: breaker.Config{Window: 30 * time.Second, MinAttempts: 5, FailureThreshold: 0.5,
		Cooldown: cooldown}})
	flaky, healthy := e.endpoint(t, srv.URL+"/flaky"), e.endpoint(t, srv.URL+"/ok")
	// Transitions are counted just after their transaction commits.
	requireTransitions := func(open, halfOpen, closed float64) {
		t.Helper()
		count := func(to string) float64 { return testutil.ToFloat64(e.metrics.BreakerTransitions.WithLabelValues(to)) }
		require.Eventually(t, func() bool {
			return count(bpctype.BreakerOpen) == open && count(bpctype.BreakerHalfOpen) == halfOpen && count(bpctype.BreakerClosed) == closed
		}, 5*time.Second, 5*time.Millisecond, "transitions: open %v, half-open %v, closed %v", count(bpctype.BreakerOpen),
			count(bpctype.BreakerHalfOpen), count(bpctype.BreakerClosed))
	}

	// 1. Five deliveries to an endpoint answering 500 trip the breaker.
	var first []bpctype.DeliveryRef
	for range 5 {
		first = append(first, e.deliver(t, flaky))
	}
	opened := e.waitState(t, flaky, bpctype.BreakerOpen, nil)
	require.GreaterOrEqual(t, srv.count("/flaky"), 5)
	require.GreaterOrEqual(t, int(opened.Attempts), 5)
	require.GreaterOrEqual(t, float64(opened.Failures)/float64(opened.Attempts), 0.5)
	require.NotNil(t, opened.OpenedAt)
	firstProbeAt := *opened.NextProbeAt
	require.Equal(t, opened.OpenedAt.Add(cooldown).UnixMicro(), firstProbeAt.UnixMicro())
	requireTransitions(1, 0, 0)

	// POSTs in flight when it opened finish; then the endpoint hears nothing.
	spent := e.settledAttempts(t, first)
	sentBeforeOpen := srv.count("/flaky")

	// 2. During the cool-down: new deliveries to it are held (snoozed, no
	// attempt spent, PENDING) while a healthy endpoint on the same queue is
	// served at once.
	var held []bpctype.DeliveryRef
	for range 3 {
		held = append(held, e.deliver(t, flaky))
	}
	for range 3 {
		ref := e.deliver(t, healthy)
		job := e.Wait(t, ref.JobID)
		require.Equal(t, bpctype.StatusSucceeded, job.Status)
		require.EqualValues(t, 1, job.Attempts)
		require.Zero(t, e.snoozes(t, ref.JobID), "a healthy endpoint is not held")
	}
	require.Eventually(t, func() bool {
		for _, ref := range held {
			if e.snoozes(t, ref.JobID) == 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, 5*time.Millisecond, "held deliveries were worked and snoozed")
	heldAttempts := e.settledAttempts(t, held)
	for _, ref := range held {
		require.Zero(t, heldAttempts[ref.JobID], "River's snooze gives the attempt back: attempts stays 0")
		d := e.delivery(t, ref.WebhookDeliveryID)
		require.Equal(t, bpctype.DeliveryPending, d.Status)
		require.Zero(t, d.Attempts)
	}
	require.Positive(t, testutil.ToFloat64(e.metrics.WebhookDeliveriesHeld))
	// Until the probe is due, the endpoint receives nothing and no job's
	// attempts grow. What is read late in the cool-down proves that only if
	// the reading ended before the probe was due: a loaded machine may read
	// later, and then the probe may be in it.
	time.Sleep(time.Until(firstProbeAt.Add(-250 * time.Millisecond)))
	sent := srv.count("/flaky")
	attempts := e.settledAttempts(t, first)
	v := breaker.ViewOf(e.breaker(t, flaky), time.Now())
	if time.Now().Before(firstProbeAt) {
		require.Equal(t, sentBeforeOpen, sent, "nothing is sent during the cool-down")
		for id, n := range attempts {
			require.Equal(t, spent[id], n, "held retries spend no attempt")
		}
		require.Equal(t, bpctype.BreakerOpen, v.State)
		require.GreaterOrEqual(t, v.FailureRate, 0.5)
	} else {
		t.Logf("the cool-down was over before its end was read: not checked")
	}

	// 3. After the cool-down exactly one probe goes; it fails and re-opens
	// the breaker for another cool-down.
	reopened := e.waitState(t, flaky, bpctype.BreakerOpen, func(b bpctype.WebhookBreaker) bool {
		return b.NextProbeAt.After(firstProbeAt)
	})
	require.Equal(t, sentBeforeOpen+1, srv.count("/flaky"), "one probe")
	require.Equal(t, opened.OpenedAt.UnixMicro(), reopened.OpenedAt.UnixMicro(), "opened_at is when it left CLOSED")
	requireTransitions(2, 1, 0)
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, sentBeforeOpen+1, srv.count("/flaky"), "held again after the failed probe")

	// 4. The endpoint recovers: the next probe closes the breaker and every
	// held delivery is delivered, each sent once.
	srv.flaky.Store(http.StatusOK)
	e.waitState(t, flaky, bpctype.BreakerClosed, nil)
	for _, ref := range append(append([]bpctype.DeliveryRef{}, first...), held...) {
		job := e.Wait(t, ref.JobID)
		require.Equal(t, bpctype.StatusSucceeded, job.Status)
		require.Equal(t, bpctype.DeliveryDelivered, e.delivery(t, ref.WebhookDeliveryID).Status)
	}
	// Attempts are spent by POSTs only: before opening, the failed probe,
	// and the final delivery.
	failedProbe := srv.delivery("/flaky", sentBeforeOpen)
	for _, ref := range append(append([]bpctype.DeliveryRef{}, first...), held...) {
		want := spent[ref.JobID] + 1
		if ref.WebhookDeliveryID.String() == failedProbe {
			want++
		}
		require.Equal(t, want, e.Job(t, ref.JobID).Attempts, "delivery %s", ref.WebhookDeliveryID)
	}
	require.Equal(t, sentBeforeOpen+1+len(first)+len(held), srv.count("/flaky"))
	requireTransitions(2, 2, 1)

	// One log line per transition, with the rate and never the secret.
	logs := e.transitions(t)
	require.Len(t, logs, 5)
	var path []string
	for _, l := range logs {
		require.Equal(t, flaky.String(), l["webhook_endpoint_id"])
		require.Contains(t, l, "failure_rate")
		path = append(path, l["from"].(string)+">"+l["to"].(string))
	}
	require.Equal(t, []string{"CLOSED>OPEN", "OPEN>HALF_OPEN", "HALF_OPEN>OPEN", "OPEN>HALF_OPEN", "HALF_OPEN>CLOSED"}, path)
	require.GreaterOrEqual(t, logs[0]["failure_rate"].(float64), 0.5)
	require.NotContains(t, e.logs.String(), secret)

	closed := breaker.ViewOf(e.breaker(t, flaky), time.Now())
	require.Equal(t, bpctype.BreakerClosed, closed.State)
	require.Nil(t, closed.OpenedAt)
	require.Nil(t, closed.NextProbeAt)
	require.Zero(t, closed.FailureRate)
	require.Equal(t, bpctype.BreakerClosed, e.breaker(t, healthy).State)

	e.Consistent(t)
}

func TestWebhookBreakerIgnores4xx(t *testing.T) {
	t.Parallel()
	srv := newEndpointServer(t)
	e := newWebhookEnv(t, webhookOptions{maxAttempts: 3, breaker: breaker.Config{Window: 30 * time.Second, MinAttempts: 2, Cooldown: time.Minute}})
	ep := e.endpoint(t, srv.URL+"/bad-request")
	for range 4 {
		ref := e.deliver(t, ep)
		require.Equal(t, bpctype.StatusFailed, e.Wait(t, ref.JobID).Status)
	}
	v := breaker.ViewOf(e.breaker(t, ep), time.Now())
	require.Equal(t, breaker.View{State: bpctype.BreakerClosed, AttemptsInWindow: 4}, v)
	require.Equal(t, 4, srv.count("/bad-request"))
	require.Zero(t, testutil.ToFloat64(e.metrics.BreakerTransitions.WithLabelValues(bpctype.BreakerOpen)))
}

func TestWebhookBreakerDisabledNeverHolds(t *testing.T) {
	t.Parallel()
	srv := newEndpointServer(t)
	e := newWebhookEnv(t, webhookOptions{maxAttempts: 3, breaker: breaker.Config{Disabled: true, MinAttempts: 1}})
	ep := e.endpoint(t, srv.URL+"/flaky")
	var refs []bpctype.DeliveryRef
	for range 3 {
		refs = append(refs, e.deliver(t, ep))
	}
	for _, ref := range refs {
		require.Equal(t, bpctype.StatusDeadLetter, e.Wait(t, ref.JobID).Status)
	}
	require.Equal(t, 9, srv.count("/flaky"), "every attempt POSTs")
	require.False(t, e.breaker(t, ep).Stored)
}
