package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/service"
	"github.com/bpc-platform/bpc/store"
)

func TestWebhookAllowPrivateConfig(t *testing.T) {
	t.Parallel()
	token := "an-admin-token-0123456789"
	for _, tc := range []struct {
		env, value string
		want       bool
	}{
		{"dev", "", true},
		{"test", "", true},
		{"prod", "", false},
		{"prod", "true", true},
		{"prod", "1", true},
		{"test", "false", false},
		{"dev", "0", false},
		{"dev", " FALSE ", false},
	} {
		cfg, err := service.LoadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x", "BPC_ENV": tc.env,
			"BPC_ADMIN_TOKEN": token, "BPC_WEBHOOK_ALLOW_PRIVATE": tc.value}))
		require.NoError(t, err)
		require.Equal(t, tc.want, cfg.WebhookAllowPrivate, "%s %q", tc.env, tc.value)
		require.Equal(t, tc.want, cfg.WebhookDestinations().AllowPrivate)
	}
	_, err := service.LoadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x", "BPC_WEBHOOK_ALLOW_PRIVATE": "maybe"}))
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
	require.Contains(t, err.Error(), "BPC_WEBHOOK_ALLOW_PRIVATE")
}

// ssrfURLs are the reproductions of the SSRF report and their neighbours.
// None of them needs DNS: the test must not send a query off this machine.
var ssrfURLs = []string{
	"http://127.0.0.1:5432/", "http://127.0.0.1:6379/", "http://localhost/hook", "http://app.localhost:8080/",
	"http://169.254.169.254/latest/meta-data/", "http://169.254.170.2/v2/credentials",
	"http://10.0.0.1/", "http://172.16.5.4/", "http://192.168.1.1/", "http://100.64.0.1/", "http://100.100.100.200/",
	"http://0.0.0.0/", "http://0.0.0.0:8080/", "http://[::]/", "http://[::1]/", "http://[fd00:ec2::254]/", "http://[fe80::1]/",
	"http://[fe80::1%25eth0]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:a9fe:a9fe]/", "http://[64:ff9b::a00:1]/",
	"http://0x7f000001/", "http://2130706433/", "http://0177.0.0.1/", "http://127.1/", "http://017700000001/",
	"http://127.0.0.1./", "http://224.0.0.1/", "http://255.255.255.255/", "http://192.0.2.1/",
	"https://127.0.0.1/", "https://[::1]:8443/",
}

// With private destinations refused, every SSRF reproduction is refused at
// registration and on update with 422 naming url, and nothing is stored.
func TestWebhookDestinationsRefusedAtRegistration(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, map[string]string{"BPC_WEBHOOK_ALLOW_PRIVATE": "false"})
	for _, u := range ssrfURLs {
		var env errorEnvelope
		require.Equal(t, http.StatusUnprocessableEntity, h.call(http.MethodPost, "/v1/webhook-endpoints",
			map[string]any{"tenant_id": devTenant, "url": u, "secret": testSecret}, &env), u)
		require.Equal(t, "VALIDATION_ERROR", env.Error.Code, u)
		require.Equal(t, "url", env.Error.Details["field"], u)
	}
	var listing struct {
		Items []store.WebhookEndpoint `json:"items"`
	}
	require.Equal(t, http.StatusOK, h.call(http.MethodGet, "/v1/webhook-endpoints?tenant_id="+devTenant, nil, &listing))
	require.Empty(t, listing.Items, "nothing stored")

	// A public literal registers (no DNS needed); moving it inside does not.
	var ep store.WebhookEndpoint
	const public = "https://[2606:4700:4700::1111]/hook"
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/webhook-endpoints",
		map[string]any{"tenant_id": devTenant, "url": public, "secret": testSecret}, &ep))
	path := "/v1/webhook-endpoints/" + ep.WebhookEndpointID.String() + "?tenant_id=" + devTenant
	for _, u := range []string{"http://10.0.0.1/", "http://0x7f000001/", "http://localhost/"} {
		var env errorEnvelope
		require.Equal(t, http.StatusUnprocessableEntity, h.call(http.MethodPatch, path, map[string]any{"url": u}, &env), u)
		require.Equal(t, "url", env.Error.Details["field"], u)
	}
	require.Equal(t, http.StatusOK, h.call(http.MethodGet, path, nil, &ep))
	require.Equal(t, public, ep.URL, "unchanged")

	// The message says why, for a literal the tenant wrote.
	var env errorEnvelope
	h.call(http.MethodPost, "/v1/webhook-endpoints", map[string]any{"tenant_id": devTenant, "url": "http://169.254.169.254/", "secret": testSecret}, &env)
	require.Equal(t, "url: 169.254.169.254 is a link-local address; webhook destinations must be public", env.Error.Message)
	require.Equal(t, "link-local", env.Error.Details["reason"])
	h.call(http.MethodPost, "/v1/webhook-endpoints", map[string]any{"tenant_id": devTenant, "url": "http://2130706433/", "secret": testSecret}, &env)
	require.Equal(t, "url: 2130706433 is a non-canonical numeric host; write an IPv4 address as four decimal numbers a.b.c.d", env.Error.Message)
}

// An endpoint stored before the policy (or by a process allowing private
// destinations) is refused when the webhook is sent: the delivery FAILS
// with WEBHOOK_DESTINATION_DENIED, the receiver gets nothing and the
// delivery shows no response.
func TestWebhookDestinationDeniedAtDialTime(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, map[string]string{"BPC_WEBHOOK_ALLOW_PRIVATE": "false"})
	rcv := newReceiver(t, http.StatusOK)
	port := rcv.Listener.Addr().(*net.TCPAddr).Port
	st := store.New(h.pool)
	for i, u := range []string{rcv.URL + "/hook", fmt.Sprintf("http://localhost:%d/hook", port)} {
		ep, err := st.CreateWebhookEndpoint(context.Background(), store.DevTenantID, u, testSecret)
		require.NoError(t, err)
		eventType := fmt.Sprintf("ssrf.dial.%d", i)
		require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/webhook-subscriptions",
			map[string]any{"tenant_id": devTenant, "webhook_endpoint_id": ep.WebhookEndpointID, "event_type": eventType}, nil))
		ev := h.emit(eventType, map[string]any{})
		require.Len(t, ev.Deliveries, 1)
		job := h.waitJob(ev.Deliveries[0].JobID)
		require.Equal(t, store.StatusFailed, job.Status, u)
		require.Equal(t, int32(1), job.Attempts, "not retried")
		require.Equal(t, "WEBHOOK_DESTINATION_DENIED", lastError(t, job).Code)
		d := h.delivery(ev.Deliveries[0].WebhookDeliveryID)
		require.Equal(t, store.DeliveryFailed, d.Status)
		require.Equal(t, "WEBHOOK_DESTINATION_DENIED", *d.ErrorCode)
		require.Nil(t, d.HTTPStatus)
		require.Empty(t, d.ResponseBody)
	}
	require.Empty(t, rcv.received(), "nothing was sent")
	h.requireConsistent()
}

// Failing to connect reads the same whatever the port: the delivery and the
// job carry one fixed message, so deliveries cannot scan ports.
func TestWebhookConnectErrorsDoNotTellPortsApart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, map[string]string{"BPC_JOBS_MAX_ATTEMPTS_DEFAULT": "1"})
	var messages []string
	for i := range 2 {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		require.NoError(t, ln.Close())
		eventType := fmt.Sprintf("ssrf.port.%d", i)
		h.subscribe(fmt.Sprintf("http://127.0.0.1:%d/hook", port), eventType)
		ev := h.emit(eventType, map[string]any{})
		job := h.waitJob(ev.Deliveries[0].JobID)
		le := lastError(t, job)
		require.Equal(t, "WEBHOOK_NETWORK", le.Code)
		d := h.delivery(ev.Deliveries[0].WebhookDeliveryID)
		require.Equal(t, le.Message, *d.ErrorMessage)
		require.NotContains(t, le.Message, fmt.Sprint(port))
		messages = append(messages, le.Message)
	}
	require.Equal(t, messages[0], messages[1])
	require.Equal(t, "could not connect to the webhook endpoint", messages[0])
}
