package store_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/store"
)

const testSecret = "whsec-super-secret-0123456789"

func TestWebhookEndpointNeverSerialisesItsSecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ep := e.endpoint(t)
	require.Equal(t, testSecret, ep.Secret, "the store keeps the secret for signing")
	require.True(t, ep.IsActive)

	b, err := json.Marshal(ep)
	require.NoError(t, err)
	require.NotContains(t, string(b), testSecret)
	require.NotContains(t, string(b), "secret")

	list, err := e.Store.ListWebhookEndpoints(e.Ctx, store.DevTenantID)
	require.NoError(t, err)
	b, err = json.Marshal(list)
	require.NoError(t, err)
	require.NotContains(t, string(b), testSecret)
	require.NotContains(t, fmt.Sprint(ep.LogValue()), testSecret)
}

func TestWebhookEndpointUnknownTenantIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.Store.CreateWebhookEndpoint(e.Ctx, uuid.New(), "https://hooks.example/in", testSecret)
	requireCode(t, err, errcode.NotFound)
}

func TestWebhookSubscriptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)
	ep := e.endpoint(t)

	sub, err := e.Store.CreateWebhookSubscription(e.Ctx, store.DevTenantID, ep.WebhookEndpointID, "passport.activated")
	require.NoError(t, err)
	require.Equal(t, ep.WebhookEndpointID, sub.WebhookEndpointID)
	require.Equal(t, "passport.activated", sub.EventType)

	_, err = e.Store.CreateWebhookSubscription(e.Ctx, store.DevTenantID, ep.WebhookEndpointID, "passport.activated")
	requireCode(t, err, errcode.InvalidState)

	_, err = e.Store.CreateWebhookSubscription(e.Ctx, other, ep.WebhookEndpointID, "passport.activated")
	requireCode(t, err, errcode.NotFound)
	_, err = e.Store.CreateWebhookSubscription(e.Ctx, store.DevTenantID, uuid.New(), "passport.activated")
	requireCode(t, err, errcode.NotFound)

	subs, err := e.Store.ListWebhookSubscriptions(e.Ctx, store.DevTenantID, &ep.WebhookEndpointID)
	require.NoError(t, err)
	require.Len(t, subs, 1)
	subs, err = e.Store.ListWebhookSubscriptions(e.Ctx, other, nil)
	require.NoError(t, err)
	require.Empty(t, subs, "subscriptions are tenant-scoped")

	requireCode(t, e.Store.DeleteWebhookSubscription(e.Ctx, other, sub.WebhookSubscriptionID), errcode.NotFound)
	require.NoError(t, e.Store.DeleteWebhookSubscription(e.Ctx, store.DevTenantID, sub.WebhookSubscriptionID))
	requireCode(t, e.Store.DeleteWebhookSubscription(e.Ctx, store.DevTenantID, sub.WebhookSubscriptionID), errcode.NotFound)
}

func TestDeleteWebhookEndpointSoftDeletesAndDropsSubscriptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ep := e.endpoint(t)
	for _, et := range []string{"passport.activated", "*"} {
		_, err := e.Store.CreateWebhookSubscription(e.Ctx, store.DevTenantID, ep.WebhookEndpointID, et)
		require.NoError(t, err)
	}
	// A delivery made before the delete stays as history.
	res := e.mustAppend(t, passportEvent(store.DevTenantID, uuid.New(), "passport.activated", `{}`))
	require.Len(t, res.Deliveries, 1)

	require.NoError(t, e.Store.DeleteWebhookEndpoint(e.Ctx, store.DevTenantID, ep.WebhookEndpointID))

	got, err := e.Store.GetWebhookEndpoint(e.Ctx, store.DevTenantID, ep.WebhookEndpointID)
	require.NoError(t, err, "the row is kept")
	require.NotNil(t, got.DeletedAt)
	require.False(t, got.IsActive)
	list, err := e.Store.ListWebhookEndpoints(e.Ctx, store.DevTenantID)
	require.NoError(t, err)
	require.Empty(t, list)
	subs, err := e.Store.ListWebhookSubscriptions(e.Ctx, store.DevTenantID, &ep.WebhookEndpointID)
	require.NoError(t, err)
	require.Empty(t, subs)
	_, err = e.Store.GetWebhookDelivery(e.Ctx, store.DevTenantID, res.Deliveries[0].WebhookDeliveryID)
	require.NoError(t, err)

	requireCode(t, e.Store.DeleteWebhookEndpoint(e.Ctx, store.DevTenantID, ep.WebhookEndpointID), errcode.NotFound)
	_, err = e.Store.UpdateWebhookEndpoint(e.Ctx, store.DevTenantID, ep.WebhookEndpointID, "https://new.example", nil)
	requireCode(t, err, errcode.NotFound)
	_, err = e.Store.CreateWebhookSubscription(e.Ctx, store.DevTenantID, ep.WebhookEndpointID, "passport.created")
	requireCode(t, err, errcode.NotFound)
}

func TestUpdateWebhookEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)
	ep, err := e.Store.CreateWebhookEndpoint(e.Ctx, store.DevTenantID, "https://old.example/in", testSecret)
	require.NoError(t, err)

	got, err := e.Store.UpdateWebhookEndpoint(e.Ctx, store.DevTenantID, ep.WebhookEndpointID, "", ptr(false))
	require.NoError(t, err)
	require.Equal(t, "https://old.example/in", got.URL, "empty url keeps the url")
	require.False(t, got.IsActive)

	got, err = e.Store.UpdateWebhookEndpoint(e.Ctx, store.DevTenantID, ep.WebhookEndpointID, "https://new.example/in", nil)
	require.NoError(t, err)
	require.Equal(t, "https://new.example/in", got.URL)
	require.False(t, got.IsActive, "nil is_active keeps it")

	_, err = e.Store.UpdateWebhookEndpoint(e.Ctx, other, ep.WebhookEndpointID, "https://evil.example", ptr(true))
	requireCode(t, err, errcode.NotFound)
	_, err = e.Store.GetWebhookEndpoint(e.Ctx, other, ep.WebhookEndpointID)
	requireCode(t, err, errcode.NotFound)
}

func TestRecordDeliveryAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ep := e.endpoint(t)
	_, err := e.Store.CreateWebhookSubscription(e.Ctx, store.DevTenantID, ep.WebhookEndpointID, "*")
	require.NoError(t, err)
	id := e.mustAppend(t, passportEvent(store.DevTenantID, uuid.New(), "passport.activated", `{}`)).Deliveries[0].WebhookDeliveryID

	at := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, e.Store.RecordDeliveryAttempt(e.Ctx, store.DevTenantID, id, bpctype.DeliveryAttempt{
		Status: bpctype.DeliveryPending, HTTPStatus: ptr(503), ErrorCode: "WEBHOOK_5XX", ErrorMessage: "endpoint answered HTTP 503", At: at,
	}))
	d, err := e.Store.GetWebhookDelivery(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	require.Equal(t, bpctype.DeliveryPending, d.Status)
	require.Equal(t, int32(1), d.Attempts)
	require.Equal(t, int32(503), *d.HTTPStatus)
	require.Equal(t, "WEBHOOK_5XX", *d.ErrorCode)
	require.Nil(t, d.DeliveredAt)

	require.NoError(t, e.Store.RecordDeliveryAttempt(e.Ctx, store.DevTenantID, id, bpctype.DeliveryAttempt{
		Status: bpctype.DeliveryDelivered, HTTPStatus: ptr(204),
		ResponseHeaders: map[string]string{"X-Request-Id": "r-1"}, ResponseBody: []byte("thanks"), At: at,
	}))
	d, err = e.Store.GetWebhookDelivery(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	require.Equal(t, bpctype.DeliveryDelivered, d.Status)
	require.Equal(t, int32(2), d.Attempts)
	require.True(t, at.Equal(*d.DeliveredAt))
	require.Nil(t, d.ErrorCode, "a success clears the previous error")
	require.Nil(t, d.ErrorMessage)
	require.JSONEq(t, `{"X-Request-Id":"r-1"}`, string(d.ResponseHeaders))

	b, err := json.Marshal(d)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	require.Equal(t, "thanks", m["response_body"], "the body is shown as text")
	require.Equal(t, "DELIVERED", m["status"])

	err = e.Store.RecordDeliveryAttempt(e.Ctx, uuid.New(), id, bpctype.DeliveryAttempt{Status: bpctype.DeliveryFailed, At: at})
	requireCode(t, err, errcode.NotFound)
}

func TestTenants(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acme, err := e.Store.CreateTenant(e.Ctx, "acme", "Acme Batteries")
	require.NoError(t, err)
	require.NotEqual(t, uuid.Nil, acme.TenantID)
	require.Equal(t, "acme", acme.Slug)

	_, err = e.Store.CreateTenant(e.Ctx, "acme", "Another Acme")
	dup := requireCode(t, err, errcode.InvalidState)
	require.Contains(t, dup.Message, "acme")

	tenants, err := e.Store.ListTenants(e.Ctx)
	require.NoError(t, err)
	slugs := make([]string, len(tenants))
	for i, tn := range tenants {
		slugs[i] = tn.Slug
		require.NotEqual(t, store.SystemTenantID, tn.TenantID)
	}
	require.Equal(t, []string{"acme", "dev"}, slugs, "sorted by slug, system tenant hidden")
	require.Equal(t, store.DevTenantID, tenants[1].TenantID)

	require.NoError(t, e.Store.RequireTenant(e.Ctx, acme.TenantID))
	require.NoError(t, e.Store.RequireTenant(e.Ctx, store.DevTenantID))
	requireCode(t, e.Store.RequireTenant(e.Ctx, uuid.New()), errcode.NotFound)
}
