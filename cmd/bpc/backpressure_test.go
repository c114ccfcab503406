package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/service"
)

// BPC_QUEUE_MAX_DEPTH: an enqueue into a queue holding more available jobs
// than the limit answers 429 RATE_LIMITED with Retry-After; other queues
// keep accepting work. The API role works no jobs, so the backlog stays.
func TestQueueMaxDepthAnswers429(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, map[string]string{"BPC_QUEUE_MAX_DEPTH": "2"})
	payload := h.deliverPayload()
	webhook := func() map[string]any {
		return map[string]any{"type": jobargs.KindDeliverWebhook, "tenant_id": devTenant,
			"payload": payload}
	}
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs:batch",
		map[string]any{"jobs": []any{webhook(), webhook(), webhook()}}, nil), "a batch is checked once, before it")
	time.Sleep(300 * time.Millisecond) // past the depth cache

	status, raw := h.raw(http.MethodPost, "/v1/jobs", webhook(), map[string]string{"Authorization": "Bearer " + testToken})
	require.Equal(t, http.StatusTooManyRequests, status, "%s", raw)
	require.Contains(t, string(raw), `"code":"RATE_LIMITED"`)
	require.Contains(t, string(raw), `"queue":"webhooks"`)
	req, _ := http.NewRequest(http.MethodPost, h.base+"/v1/jobs", strings.NewReader(jsonString(webhook())))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))

	// The pipeline queue is not full.
	var sn struct {
		SnapshotID uuid.UUID `json:"snapshot_id"`
	}
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/snapshots", map[string]any{"tenant_id": devTenant}, &sn))
	require.Equal(t, http.StatusAccepted, h.call(http.MethodPost, "/v1/snapshots/"+sn.SnapshotID.String()+"/build",
		map[string]any{"tenant_id": devTenant}, nil))
}

// An endpoint's circuit breaker state is part of GET /v1/webhook-endpoints/{id}:
// CLOSED with an empty window for a new endpoint, OPEN after failures.
func TestWebhookEndpointShowsItsBreaker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, map[string]string{"BPC_WEBHOOK_BREAKER_MIN_ATTEMPTS": "2", "BPC_WEBHOOK_BREAKER_COOLDOWN_MS": "60000"})
	recv := newReceiver(t, http.StatusInternalServerError)
	endpointID := h.subscribe(recv.URL+"/hooks", "breaker.test")
	type breaker struct {
		State            string  `json:"state"`
		FailureRate      float64 `json:"failure_rate"`
		AttemptsInWindow int     `json:"attempts_in_window"`
	}
	var ep struct {
		Breaker breaker `json:"breaker"`
	}
	path := "/v1/webhook-endpoints/" + endpointID.String() + "?tenant_id=" + devTenant
	require.Equal(t, http.StatusOK, h.call(http.MethodGet, path, nil, &ep))
	require.Equal(t, breaker{State: "CLOSED"}, ep.Breaker)

	h.emit("breaker.test", map[string]any{"n": 1})
	h.eventually("the breaker opens after two 500s", func() bool {
		require.Equal(t, http.StatusOK, h.call(http.MethodGet, path, nil, &ep))
		return ep.Breaker.State == "OPEN"
	})
	require.InDelta(t, 1.0, ep.Breaker.FailureRate, 0.001)
	require.GreaterOrEqual(t, ep.Breaker.AttemptsInWindow, 2)
}
