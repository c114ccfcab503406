package workers_test

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/testnet"
	"github.com/bpc-platform/bpc/internal/webhook/destination"
	"github.com/bpc-platform/bpc/workers"
)

// unaccepting returns a loopback address whose connections are never
// accepted: a listener with a backlog of 0 and its one queued connection
// taken, so that the kernel drops further SYNs and a dial waits for its
// timeout (what a filtered port or a silent host does). It checks that a
// plain dial there does time out, so that the tests that use it measure a
// connect timeout and not something else.
func unaccepting(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	for range 16 {
		c, err := net.DialTimeout("tcp4", addr, 500*time.Millisecond)
		if err != nil {
			var netErr net.Error
			require.True(t, errors.As(err, &netErr) && netErr.Timeout(), "a dial to the full backlog fails by timing out: %v", err)
			return addr
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	t.Fatal("the listener's backlog never filled: a connect timeout cannot be made on this host's loopback")
	return ""
}

// A tarpit costs a webhook worker the response-header timeout, not the
// POST's total: the attempt ends as WEBHOOK_TIMEOUT saying no headers came
// (the total, a minute here, would say "no response within 1m0s" — and
// Wait's bound, which only says the job did not hang, is shorter).
func TestDeliverWebhookTarpitHitsTheResponseHeaderTimeout(t *testing.T) {
	t.Parallel()
	client := workers.NewWebhookHTTPClient(&destination.Policy{AllowPrivate: true},
		workers.Timeouts{Connect: 5 * time.Second, ResponseHeader: 300 * time.Millisecond})
	e := newWebhookEnv(t, webhookOptions{maxAttempts: 1, client: client, timeout: time.Minute})

	_, ref := e.deliverTo(t, "http://"+testnet.Tarpit(t)+"/hook")
	job := e.Wait(t, ref.JobID)
	le := lastJobError(t, job)
	require.Equal(t, "WEBHOOK_TIMEOUT", le.Code)
	require.Equal(t, "the endpoint took the request but sent no response headers in time", le.Message)
	d := e.delivery(t, ref.WebhookDeliveryID)
	require.Equal(t, bpctype.DeliveryFailed, d.Status, "the only attempt")
	require.Equal(t, "WEBHOOK_TIMEOUT", *d.ErrorCode)
	require.Nil(t, d.HTTPStatus)
	require.Equal(t, 1.0, testutil.ToFloat64(e.metrics.WebhookOutcomes.WithLabelValues("WEBHOOK_TIMEOUT")))
}

// An endpoint that never accepts the connection costs the connect timeout,
// and reads like every other failure to connect (WEBHOOK_NETWORK, one
// message): a timeout told apart from a refusal would say "filtered" where
// a refusal says "closed". The log keeps the cause.
func TestDeliverWebhookUnacceptedConnectionHitsTheConnectTimeout(t *testing.T) {
	t.Parallel()
	addr := unaccepting(t)
	client := workers.NewWebhookHTTPClient(&destination.Policy{AllowPrivate: true},
		workers.Timeouts{Connect: 300 * time.Millisecond, ResponseHeader: time.Minute})
	e := newWebhookEnv(t, webhookOptions{maxAttempts: 1, client: client, timeout: time.Minute})

	_, ref := e.deliverTo(t, "http://"+addr+"/hook")
	job := e.Wait(t, ref.JobID)
	le := lastJobError(t, job)
	require.Equal(t, "WEBHOOK_NETWORK", le.Code)
	require.Equal(t, "could not connect to the webhook endpoint", le.Message)
	d := e.delivery(t, ref.WebhookDeliveryID)
	require.Equal(t, "WEBHOOK_NETWORK", *d.ErrorCode)
	require.Nil(t, d.HTTPStatus)
	require.Contains(t, e.logs.String(), "i/o timeout", "the log says it was the connect timeout")
	require.NotContains(t, e.logs.String(), "/hook", "the log does not carry the URL")
}

// The client's phase timeouts default to SPEC §15's when left zero: a
// client built with none still gives up on a tarpit (here within a POST
// total longer than the default response-header timeout, 10 s).
func TestWebhookClientDefaultsBoundTheTarpit(t *testing.T) {
	t.Parallel()
	client := workers.NewWebhookHTTPClient(&destination.Policy{AllowPrivate: true}, workers.Timeouts{})
	req, err := newPost("http://" + testnet.Tarpit(t) + "/hook")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		require.Contains(t, err.Error(), "timeout awaiting response headers")
	case <-time.After(60 * time.Second):
		t.Fatal("the default client waited on a tarpit for a minute")
	}
}

func newPost(url string) (*http.Request, error) {
	return http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
}

// A receiver that sends its headers at once and then trickles its body
// holds the worker for the body's read bound, not the POST's total (two
// minutes here, past Wait's did-not-hang bound): a 200 is delivered, and
// the part of a body that was cut short is not recorded.
func TestDeliverWebhookTricklingBodyDoesNotHoldTheWorker(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(srv.Close)
	client := workers.NewWebhookHTTPClient(&destination.Policy{AllowPrivate: true}, workers.DefaultTimeouts)
	e := newWebhookEnv(t, webhookOptions{maxAttempts: 1, client: client, timeout: 2 * time.Minute})

	_, ref := e.deliverTo(t, srv.URL+"/hook")
	job := e.Wait(t, ref.JobID)
	require.Equal(t, bpctype.StatusSucceeded, job.Status)
	d := e.delivery(t, ref.WebhookDeliveryID)
	require.Equal(t, bpctype.DeliveryDelivered, d.Status)
	require.EqualValues(t, http.StatusOK, *d.HTTPStatus)
	require.Empty(t, d.ResponseBody, "a body cut short is not recorded")
}
