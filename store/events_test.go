package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/audit"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

func (e env) append(t *testing.T, in passport.EventInput) (passport.AppendResult, error) {
	t.Helper()
	return committed(e, func(q *store.Queries) (passport.AppendResult, error) {
		return passport.Tx{Q: q, Ins: e.River}.AppendEvent(e.Ctx, in)
	})
}

// requireChain asserts that the tenant's audit chain verifies and holds n
// events.
func (e env) requireChain(t *testing.T, tenantID uuid.UUID, n int, msgAndArgs ...any) {
	t.Helper()
	got, err := passport.VerifyAuditChain(e.Ctx, e.Store, tenantID)
	require.NoError(t, err)
	require.Equal(t, n, got, msgAndArgs...)
}

func (e env) mustAppend(t *testing.T, in passport.EventInput) passport.AppendResult {
	t.Helper()
	res, err := e.append(t, in)
	require.NoError(t, err)
	return res
}

func passportEvent(tenantID, aggregateID uuid.UUID, eventType, payload string) passport.EventInput {
	return passport.EventInput{
		TenantID:      tenantID,
		AggregateType: "passport",
		AggregateID:   aggregateID,
		EventType:     eventType,
		Payload:       json.RawMessage(payload),
	}
}

func TestAppendEventBuildsHashChain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	agg := uuid.New()
	first := e.mustAppend(t, passportEvent(store.DevTenantID, agg, "passport.created", `{"b":2, "a":1}`)).Event
	in := passportEvent(store.DevTenantID, agg, "passport.compiled", `{"version":2}`)
	in.ActorID = "operator-7"
	second := e.mustAppend(t, in).Event
	third := e.mustAppend(t, passportEvent(store.DevTenantID, agg, "passport.activated", `{}`)).Event
	// Another aggregate starts its own chain.
	other := e.mustAppend(t, passportEvent(store.DevTenantID, uuid.New(), "passport.created", `{}`)).Event

	require.Equal(t, []int64{1, 2, 3}, []int64{first.AggregateVersion, second.AggregateVersion, third.AggregateVersion})
	require.Nil(t, first.PrevEventHash)
	require.Equal(t, first.EventHash, *second.PrevEventHash)
	require.Equal(t, second.EventHash, *third.PrevEventHash)
	require.Equal(t, int64(1), other.AggregateVersion)
	require.Nil(t, other.PrevEventHash)

	// The payload is stored canonical and payload_hash is its SHA-256.
	require.Equal(t, `{"a":1,"b":2}`, string(first.Payload))
	require.Equal(t, hash.SHA256Hex([]byte(`{"a":1,"b":2}`)), first.PayloadHash)

	// event_hash is BPC-EVENT-1 over the stored fields, recomputed independently of the store.
	stored, err := e.Store.GetEvent(e.Ctx, store.DevTenantID, second.EventID)
	require.NoError(t, err)
	require.Equal(t, "operator-7", *stored.ActorID)
	want, err := audit.Hash(audit.Event{
		TenantID: store.DevTenantID.String(), AggregateType: "passport", AggregateID: agg.String(),
		AggregateVersion: 2, EventType: "passport.compiled", OccurredAt: stored.OccurredAt,
		ActorID: "operator-7", PayloadHash: stored.PayloadHash, PrevEventHash: first.EventHash,
	})
	require.NoError(t, err)
	require.Equal(t, want, stored.EventHash)
	require.Equal(t, second.EventHash, stored.EventHash, "the hash returned equals the hash stored")

	e.requireChain(t, store.DevTenantID, 4)
}

func TestAppendEventRejectsFractionalPayload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, payload := range []string{`{"x":1.5}`, `{"x":1e3}`, `{"x":`, `{"a":1,"a":2}`} {
		_, err := e.append(t, passportEvent(store.DevTenantID, uuid.New(), "passport.created", payload))
		ve := requireCode(t, err, errcode.Validation)
		require.Equal(t, "payload", ve.Field, payload)
	}
	e.requireChain(t, store.DevTenantID, 0, "nothing was appended")
}

func TestAppendEventUnknownTenantIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.append(t, passportEvent(uuid.New(), uuid.New(), "passport.created", `{}`))
	requireCode(t, err, errcode.NotFound)
}

func TestEventsTableIsAppendOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.mustAppend(t, passportEvent(store.DevTenantID, uuid.New(), "passport.created", `{"n":1}`)).Event
	for _, sql := range []string{
		`UPDATE events SET event_type = 'passport.deleted' WHERE event_id = $1`,
		`DELETE FROM events WHERE event_id = $1`,
	} {
		_, err := e.Pool.Exec(e.Ctx, sql, ev.EventID)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, sql)
		require.Equal(t, "23001", pgErr.Code, "restrict_violation: %s", pgErr.Message)
		require.Contains(t, pgErr.Message, "append-only")
	}
	e.requireChain(t, store.DevTenantID, 1)
}

func TestVerifyAuditChainDetectsTampering(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		tamper    string // $1 is the tenant whose chain is tampered with
		wantError string
	}{
		{"payload byte changed", `UPDATE events SET payload = convert_to('{"n":3}', 'UTF8')
			WHERE tenant_id = $1 AND aggregate_version = 2`, "payload does not match payload_hash"},
		{"payload and its hash rewritten", `UPDATE events SET payload = convert_to('{"n":3}', 'UTF8'),
			payload_hash = encode(sha256(convert_to('{"n":3}', 'UTF8')), 'hex')
			WHERE tenant_id = $1 AND aggregate_version = 2`, "event_hash does not match"},
		{"event type changed", `UPDATE events SET event_type = 'passport.revoked'
			WHERE tenant_id = $1 AND aggregate_version = 2`, "event_hash does not match"},
		{"occurred_at moved", `UPDATE events SET occurred_at = occurred_at + interval '1 microsecond'
			WHERE tenant_id = $1 AND aggregate_version = 2`, "event_hash does not match"},
		{"middle event removed", `DELETE FROM events WHERE tenant_id = $1 AND aggregate_version = 2`,
			"aggregate version 3, expected 2"},
		{"chain relinked", `UPDATE events SET prev_event_hash = NULL WHERE tenant_id = $1 AND aggregate_version = 3`,
			"prev_event_hash does not link"},
	}
	// One schema; each case tampers with the chain of its own tenant.
	e := newEnv(t)
	tenants := make([]uuid.UUID, len(tests))
	for i := range tests {
		tn, err := e.Store.CreateTenant(e.Ctx, fmt.Sprintf("tamper-%d", i), "Tamper")
		require.NoError(t, err)
		tenants[i] = tn.TenantID
		agg := uuid.New()
		for _, payload := range []string{`{"n":1}`, `{"n":2}`, `{"n":3}`} {
			e.mustAppend(t, passportEvent(tn.TenantID, agg, "passport.updated", payload))
		}
		e.requireChain(t, tn.TenantID, 3)
	}
	e.Exec(t, `ALTER TABLE events DISABLE TRIGGER events_append_only`)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.Exec(t, tt.tamper, tenants[i])
			_, err := passport.VerifyAuditChain(e.Ctx, e.Store, tenants[i])
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.wantError)
		})
	}
}

func TestAppendEventConcurrentAppendIsVersionConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	agg := uuid.New()
	e.mustAppend(t, passportEvent(store.DevTenantID, agg, "passport.created", `{}`))

	appendBy := func(by string) func(q *store.Queries) error {
		return func(q *store.Queries) error {
			_, err := passport.Tx{Q: q, Ins: e.River}.AppendEvent(e.Ctx, passportEvent(store.DevTenantID, agg, "passport.compiled", `{"by":`+by+`}`))
			return err
		}
	}
	err := e.race(t, appendBy("1"), appendBy("2"))
	conflict := requireCode(t, err, errcode.EventVersionConflict)
	require.True(t, conflict.Retryable(), "a version conflict is retried")

	e.requireChain(t, store.DevTenantID, 2)
}

func TestAppendEventFansOutToSubscribedEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)

	endpoint := func(tenantID uuid.UUID, eventType string) bpctype.WebhookEndpoint {
		t.Helper()
		ep, err := e.Store.CreateWebhookEndpoint(e.Ctx, tenantID, "https://hooks.example/"+uuid.NewString(), "whsec-0123456789abcdef")
		require.NoError(t, err)
		if eventType != "" {
			_, err = e.Store.CreateWebhookSubscription(e.Ctx, tenantID, ep.WebhookEndpointID, eventType)
			require.NoError(t, err)
		}
		return ep
	}
	exact := endpoint(store.DevTenantID, "passport.activated")
	wildcard := endpoint(store.DevTenantID, "*")
	both := endpoint(store.DevTenantID, "passport.activated")
	_, err := e.Store.CreateWebhookSubscription(e.Ctx, store.DevTenantID, both.WebhookEndpointID, "*")
	require.NoError(t, err)
	unrelated := endpoint(store.DevTenantID, "passport.created")
	inactive := endpoint(store.DevTenantID, "passport.activated")
	_, err = e.Store.UpdateWebhookEndpoint(e.Ctx, store.DevTenantID, inactive.WebhookEndpointID, "", ptr(false))
	require.NoError(t, err)
	deleted := endpoint(store.DevTenantID, "passport.activated")
	require.NoError(t, e.Store.DeleteWebhookEndpoint(e.Ctx, store.DevTenantID, deleted.WebhookEndpointID))
	foreign := endpoint(other, "passport.activated")
	_ = endpoint(other, "*")

	res := e.mustAppend(t, passportEvent(store.DevTenantID, uuid.New(), "passport.activated", `{"ok":true}`))

	got := map[uuid.UUID]bpctype.DeliveryRef{}
	for _, d := range res.Deliveries {
		got[d.WebhookEndpointID] = d
	}
	require.Len(t, res.Deliveries, 3, "one delivery per endpoint, even with two matching subscriptions")
	require.Contains(t, got, exact.WebhookEndpointID)
	require.Contains(t, got, wildcard.WebhookEndpointID)
	require.Contains(t, got, both.WebhookEndpointID)
	for _, none := range []bpctype.WebhookEndpoint{unrelated, inactive, deleted, foreign} {
		require.NotContains(t, got, none.WebhookEndpointID)
	}

	for _, ref := range res.Deliveries {
		d, err := e.Store.GetWebhookDelivery(e.Ctx, store.DevTenantID, ref.WebhookDeliveryID)
		require.NoError(t, err)
		require.Equal(t, bpctype.DeliveryPending, d.Status)
		require.Equal(t, res.Event.EventID, d.EventID)
		require.Equal(t, ref.JobID, *d.JobID)
		require.Zero(t, d.Attempts)

		job := e.job(t, store.DevTenantID, ref.JobID)
		require.Equal(t, "DELIVER_WEBHOOK", job.Type)
		require.Equal(t, bpctype.StatusQueued, job.Status)
		require.Equal(t, "webhooks", job.Queue)
		require.Equal(t, int16(3), job.Priority)
		require.Equal(t, store.DevTenantID, job.TenantID)
		var args jobargs.DeliverWebhookArgs
		require.NoError(t, json.Unmarshal(job.Payload, &args))
		require.Equal(t, ref.WebhookDeliveryID, args.WebhookDeliveryID)
		require.Equal(t, store.DevTenantID, args.TenantID)

		toSend, err := e.Store.LoadDeliveryToSend(e.Ctx, store.DevTenantID, ref.WebhookDeliveryID)
		require.NoError(t, err)
		require.Equal(t, ref.WebhookEndpointID, toSend.Endpoint.WebhookEndpointID)
		require.Equal(t, "whsec-0123456789abcdef", toSend.Endpoint.Secret)
		require.Equal(t, res.Event.EventHash, toSend.Event.EventHash)
	}

	// The other tenant's event reaches only the other tenant's endpoints.
	res = e.mustAppend(t, passportEvent(other, uuid.New(), "passport.activated", `{}`))
	require.Len(t, res.Deliveries, 2)
	for _, d := range res.Deliveries {
		require.NotEqual(t, exact.WebhookEndpointID, d.WebhookEndpointID)
	}
	require.Contains(t, []uuid.UUID{res.Deliveries[0].WebhookEndpointID, res.Deliveries[1].WebhookEndpointID}, foreign.WebhookEndpointID)
	e.requireConsistent(t)
}

func TestAppendEventWithoutSubscribersHasNoDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.mustAppend(t, passportEvent(store.DevTenantID, uuid.New(), "passport.created", ``))
	require.NotNil(t, res.Deliveries)
	require.Empty(t, res.Deliveries)
	require.Equal(t, "{}", string(res.Event.Payload), "an empty payload is stored as {}")
	require.Zero(t, countRiverJobs(t, e))
}

func TestAppendEventDeliverToSendsToExactlyThatEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)
	target, err := e.Store.CreateWebhookEndpoint(e.Ctx, store.DevTenantID, "https://a.example/hook", "whsec-0123456789abcdef")
	require.NoError(t, err)
	subscribed, err := e.Store.CreateWebhookEndpoint(e.Ctx, store.DevTenantID, "https://b.example/hook", "whsec-0123456789abcdef")
	require.NoError(t, err)
	_, err = e.Store.CreateWebhookSubscription(e.Ctx, store.DevTenantID, subscribed.WebhookEndpointID, "*")
	require.NoError(t, err)
	foreign, err := e.Store.CreateWebhookEndpoint(e.Ctx, other, "https://c.example/hook", "whsec-0123456789abcdef")
	require.NoError(t, err)

	in := passportEvent(store.DevTenantID, target.WebhookEndpointID, "webhook.ping", `{}`)
	in.AggregateType = "webhook_endpoint"
	in.DeliverTo = &target.WebhookEndpointID
	res := e.mustAppend(t, in)
	require.Len(t, res.Deliveries, 1)
	require.Equal(t, target.WebhookEndpointID, res.Deliveries[0].WebhookEndpointID)

	// Another tenant's endpoint cannot be targeted.
	in = passportEvent(store.DevTenantID, foreign.WebhookEndpointID, "webhook.ping", `{}`)
	in.AggregateType = "webhook_endpoint"
	in.DeliverTo = &foreign.WebhookEndpointID
	res = e.mustAppend(t, in)
	require.Empty(t, res.Deliveries)
}

func TestGetEventIsTenantScoped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)
	ev := e.mustAppend(t, passportEvent(store.DevTenantID, uuid.New(), "passport.created", `{}`)).Event
	_, err := e.Store.GetEvent(e.Ctx, other, ev.EventID)
	requireCode(t, err, errcode.NotFound)
	require.True(t, errors.Is(err, store.ErrNotFound))
}
