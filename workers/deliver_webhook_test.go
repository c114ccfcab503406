package workers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/webhook/destination"
	"github.com/bpc-platform/bpc/workers"
)

const secret = "whsec-worker-test-0123456789"

// received is one request the endpoint saw.
type received struct {
	header http.Header
	body   []byte
}

// endpointServer answers each path with a fixed status and records requests.
type endpointServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests map[string][]received
}

func newEndpointServer(t *testing.T) *endpointServer {
	s := &endpointServer{requests: map[string][]received{}}
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

type workerEnv struct {
	ctx     context.Context
	store   *store.Queries
	river   *river.Client[pgx.Tx]
	metrics *workers.Metrics
}

func newWorkerEnv(t *testing.T, maxAttempts int) workerEnv {
	t.Helper()
	return newWorkerEnvWithClient(t, maxAttempts, workers.NewHTTPClient())
}

// newWorkerEnvWithClient is newWorkerEnv sending webhooks with client.
func newWorkerEnvWithClient(t *testing.T, maxAttempts int, client *http.Client) workerEnv {
	t.Helper()
	pool := testdb.New(t)
	logger := slog.New(slog.DiscardHandler)
	metrics := workers.NewMetrics(prometheus.NewRegistry())
	st := store.New(pool)
	w := river.NewWorkers()
	workers.Register(w, workers.Deps{Store: st, Logger: logger, Metrics: metrics,
		HTTPClient: client, WebhookTimeout: 5 * time.Second})
	riverClient, err := workers.NewClient(pool, workers.ClientOptions{
		ID: "worker-test", Logger: logger, Work: true, Concurrency: 4,
		PollInterval: 20 * time.Millisecond, BackoffUnit: time.Millisecond, MaxAttempts: maxAttempts,
		Workers: w, Observer: &workers.Observer{Logger: logger, Metrics: metrics},
	})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, riverClient.Start(ctx))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = riverClient.Stop(stopCtx)
	})
	return workerEnv{ctx: ctx, store: st, river: riverClient, metrics: metrics}
}

// deliverTo creates an endpoint at url and appends an event delivered to it.
func (e workerEnv) deliverTo(t *testing.T, url string) (store.Event, store.DeliveryRef) {
	t.Helper()
	ep, err := e.store.CreateWebhookEndpoint(e.ctx, store.DevTenantID, url, secret)
	require.NoError(t, err)
	var res store.AppendResult
	require.NoError(t, e.store.InTx(e.ctx, func(tx pgx.Tx) error {
		res, err = e.store.WithTx(tx).AppendEvent(e.ctx, e.river, store.EventInput{
			TenantID: store.DevTenantID, AggregateType: "passport", AggregateID: uuid.New(),
			EventType: "passport.activated", Payload: json.RawMessage(`{"passport_id":"p-1"}`),
			DeliverTo: &ep.WebhookEndpointID,
		})
		return err
	}))
	require.Len(t, res.Deliveries, 1)
	return res.Event, res.Deliveries[0]
}

func (e workerEnv) waitTerminal(t *testing.T, jobID uuid.UUID) store.Job {
	t.Helper()
	var job store.Job
	require.Eventually(t, func() bool {
		var err error
		job, err = e.store.GetJob(e.ctx, store.DevTenantID, jobID)
		require.NoError(t, err)
		return store.IsTerminal(job.Status)
	}, 15*time.Second, 20*time.Millisecond, "job %s never finished", jobID)
	return job
}

func (e workerEnv) delivery(t *testing.T, id uuid.UUID) store.WebhookDelivery {
	t.Helper()
	d, err := e.store.GetWebhookDelivery(e.ctx, store.DevTenantID, id)
	require.NoError(t, err)
	return d
}

func lastErrorCode(t *testing.T, job store.Job) string {
	t.Helper()
	var le struct {
		Code string `json:"code"`
	}
	require.NoError(t, json.Unmarshal(job.LastError, &le), "last_error %s", job.LastError)
	return le.Code
}

func TestDeliverWebhookWorker(t *testing.T) {
	t.Parallel()
	srv := newEndpointServer(t)
	e := newWorkerEnv(t, 2)

	okEvent, okRef := e.deliverTo(t, srv.URL+"/ok")
	_, badRef := e.deliverTo(t, srv.URL+"/bad-request")
	_, redirectRef := e.deliverTo(t, srv.URL+"/redirect")
	_, failingRef := e.deliverTo(t, srv.URL+"/server-error")
	_, throttledRef := e.deliverTo(t, srv.URL+"/too-many")

	t.Run("2xx delivers a signed BPC-WH-1 request", func(t *testing.T) {
		job := e.waitTerminal(t, okRef.JobID)
		require.Equal(t, store.StatusSucceeded, job.Status)
		d := e.delivery(t, okRef.WebhookDeliveryID)
		require.Equal(t, store.DeliveryDelivered, d.Status)
		require.Equal(t, int32(http.StatusAccepted), *d.HTTPStatus)
		require.NotNil(t, d.DeliveredAt)
		require.Equal(t, []byte("thanks"), d.ResponseBody)
		var headers map[string]string
		require.NoError(t, json.Unmarshal(d.ResponseHeaders, &headers))
		require.Equal(t, "yes", headers["X-Receiver"])

		reqs := srv.seen("/ok")
		require.Len(t, reqs, 1)
		stored, err := e.store.GetEvent(e.ctx, store.DevTenantID, okEvent.EventID)
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
		job := e.waitTerminal(t, badRef.JobID)
		require.Equal(t, store.StatusFailed, job.Status)
		require.Equal(t, int32(1), job.Attempts, "a 4xx is not retried")
		require.Equal(t, "WEBHOOK_4XX", lastErrorCode(t, job))
		d := e.delivery(t, badRef.WebhookDeliveryID)
		require.Equal(t, store.DeliveryFailed, d.Status)
		require.Equal(t, int32(http.StatusBadRequest), *d.HTTPStatus)
		require.Equal(t, "WEBHOOK_4XX", *d.ErrorCode)
	})

	t.Run("redirects are not followed", func(t *testing.T) {
		job := e.waitTerminal(t, redirectRef.JobID)
		require.Equal(t, store.StatusFailed, job.Status)
		d := e.delivery(t, redirectRef.WebhookDeliveryID)
		require.Equal(t, int32(http.StatusFound), *d.HTTPStatus)
		require.Contains(t, *d.ErrorMessage, "redirects are not followed")
		require.Len(t, srv.seen("/redirect"), 1)
	})

	t.Run("5xx is retried then dead-lettered", func(t *testing.T) {
		job := e.waitTerminal(t, failingRef.JobID)
		require.Equal(t, store.StatusDeadLetter, job.Status)
		require.Equal(t, int32(2), job.Attempts)
		require.Equal(t, "WEBHOOK_5XX", lastErrorCode(t, job))
		require.Len(t, srv.seen("/server-error"), 2)
		d := e.delivery(t, failingRef.WebhookDeliveryID)
		require.Equal(t, store.DeliveryFailed, d.Status, "the last attempt fails the delivery")
		require.Equal(t, int32(2), d.Attempts)
	})

	t.Run("429 is retried like a 5xx", func(t *testing.T) {
		job := e.waitTerminal(t, throttledRef.JobID)
		require.Equal(t, store.StatusDeadLetter, job.Status)
		require.Len(t, srv.seen("/too-many"), 2)
	})

	require.Equal(t, 2.0, testutil.ToFloat64(e.metrics.DeadLetter.WithLabelValues("DELIVER_WEBHOOK")))
	rep, err := e.store.CheckConsistency(e.ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "drift: %+v", rep.Drifts)
}

func TestDeliverWebhookWorkerInactiveEndpointFailsWithoutPosting(t *testing.T) {
	t.Parallel()
	srv := newEndpointServer(t)
	e := newWorkerEnv(t, 3)
	// Hold the job until the endpoint is deactivated.
	ep, err := e.store.CreateWebhookEndpoint(e.ctx, store.DevTenantID, srv.URL+"/ok", secret)
	require.NoError(t, err)
	_, err = e.store.UpdateWebhookEndpoint(e.ctx, store.DevTenantID, ep.WebhookEndpointID, "", ptrBool(false))
	require.NoError(t, err)
	var res store.AppendResult
	require.NoError(t, e.store.InTx(e.ctx, func(tx pgx.Tx) error {
		res, err = e.store.WithTx(tx).AppendEvent(e.ctx, e.river, store.EventInput{
			TenantID: store.DevTenantID, AggregateType: "webhook_endpoint", AggregateID: ep.WebhookEndpointID,
			EventType: "webhook.ping", DeliverTo: &ep.WebhookEndpointID,
		})
		return err
	}))
	require.Len(t, res.Deliveries, 1)

	job := e.waitTerminal(t, res.Deliveries[0].JobID)
	require.Equal(t, store.StatusFailed, job.Status)
	require.Equal(t, "INVALID_STATE", lastErrorCode(t, job))
	d := e.delivery(t, res.Deliveries[0].WebhookDeliveryID)
	require.Equal(t, store.DeliveryFailed, d.Status)
	require.Equal(t, "INVALID_STATE", *d.ErrorCode)
	require.Empty(t, srv.seen("/ok"), "nothing is sent to an inactive endpoint")
}

func ptrBool(b bool) *bool { return &b }

// lastError is a job's last_error as the API shows it.
func lastError(t *testing.T, job store.Job) (code, message string) {
	t.Helper()
	var le struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	require.NoError(t, json.Unmarshal(job.LastError, &le), "last_error %s", job.LastError)
	return le.Code, le.Message
}

// With private destinations refused, a delivery to an endpoint that points
// inside — stored before the policy, or whose name now resolves inside —
// fails at once with WEBHOOK_DESTINATION_DENIED, nothing reaches the
// address, and the delivery records no response.
func TestDeliverWebhookWorkerDeniedDestination(t *testing.T) {
	t.Parallel()
	srv := newEndpointServer(t)
	e := newWorkerEnvWithClient(t, 3, workers.NewPolicyHTTPClient(&destination.Policy{}))
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	for _, url := range []string{
		srv.URL + "/ok", // 127.0.0.1, refused before resolving
		fmt.Sprintf("http://localhost:%d/ok", port),          // a localhost name
		fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/ok", port), // IPv4-mapped
		fmt.Sprintf("http://2130706433:%d/ok", port),         // a numeric spelling
	} {
		_, ref := e.deliverTo(t, url)
		job := e.waitTerminal(t, ref.JobID)
		require.Equal(t, store.StatusFailed, job.Status, url)
		require.Equal(t, int32(1), job.Attempts, "%s: not retried", url)
		code, msg := lastError(t, job)
		require.Equal(t, "WEBHOOK_DESTINATION_DENIED", code, url)
		require.NotContains(t, msg, "127.0.0.1", "the delivery does not echo the address")
		d := e.delivery(t, ref.WebhookDeliveryID)
		require.Equal(t, store.DeliveryFailed, d.Status)
		require.Equal(t, "WEBHOOK_DESTINATION_DENIED", *d.ErrorCode)
		require.Nil(t, d.HTTPStatus)
		require.Empty(t, d.ResponseBody)
		require.True(t, len(d.ResponseHeaders) == 0 || string(d.ResponseHeaders) == "null" || string(d.ResponseHeaders) == "{}", "%s", d.ResponseHeaders)
	}
	require.Empty(t, srv.seen("/ok"), "nothing was sent")
	rep, err := e.store.CheckConsistency(e.ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "drift: %+v", rep.Drifts)
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
	e := newWorkerEnv(t, 1)

	urls := []string{
		fmt.Sprintf("http://127.0.0.1:%d/hook", closedPort(t)),
		fmt.Sprintf("http://127.0.0.1:%d/hook", closedPort(t)),
		strings.Replace(srv.URL, "http://", "https://", 1) + "/ok",
		"http://" + hangUp.Addr().String() + "/hook",
	}
	var messages, deliveryMessages []string
	for _, url := range urls {
		_, ref := e.deliverTo(t, url)
		job := e.waitTerminal(t, ref.JobID)
		code, msg := lastError(t, job)
		require.Equal(t, "WEBHOOK_NETWORK", code, url)
		d := e.delivery(t, ref.WebhookDeliveryID)
		require.Equal(t, "WEBHOOK_NETWORK", *d.ErrorCode, url)
		require.Nil(t, d.HTTPStatus)
		messages, deliveryMessages = append(messages, msg), append(deliveryMessages, *d.ErrorMessage)
	}
	for i := range urls {
		require.Equal(t, "could not connect to the webhook endpoint", messages[i], urls[i])
		require.Equal(t, "could not connect to the webhook endpoint", deliveryMessages[i], urls[i])
	}
	require.Empty(t, srv.seen("/ok"), "the TLS handshake never became a request")
}
