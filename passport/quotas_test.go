package passport_test

import (
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
)

// small are quotas small enough to reach in a test.
func small() passport.Quotas {
	q := passport.DefaultQuotas()
	q.WebhookEndpoints, q.WebhookSubscriptions, q.APIKeys, q.QueuedJobs, q.EventPayloadBytes = 3, 4, 2, 5, 64
	return q
}

func (e env) tenant(t *testing.T) uuid.UUID {
	t.Helper()
	slug := "q-" + uuid.NewString()[:8]
	tn, err := e.Store.CreateTenant(e.Ctx, slug, slug)
	require.NoError(t, err)
	return tn.TenantID
}

func (e env) endpoint(t *testing.T, q passport.Quotas, tenantID uuid.UUID, url string) (bpctype.WebhookEndpoint, error) {
	t.Helper()
	var ep bpctype.WebhookEndpoint
	err := e.run(t, func(tx passport.Tx) error {
		var err error
		ep, err = passport.CreateWebhookEndpoint(e.Ctx, tx, q, tenantID, url, "whsec-0123456789abcdef")
		return err
	})
	return ep, err
}

// requireQuota asserts err is QUOTA_EXCEEDED naming quota, limit and use.
func requireQuota(t *testing.T, err error, quota string, limit, used int) {
	t.Helper()
	e := errcode.As(err)
	require.NotNil(t, e, "%v", err)
	require.Equal(t, errcode.QuotaExceeded, e.Code, "%v", err)
	require.Equal(t, map[string]any{"quota": quota, "limit": limit, "used": used}, withoutRetry(e.Details))
}

func withoutRetry(d map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range d {
		if k != "retry_after_seconds" {
			out[k] = v
		}
	}
	return out
}

func TestEndpointQuotaCountsLiveEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := small()
	tenant, other := e.tenant(t), e.tenant(t)
	var first bpctype.WebhookEndpoint
	for i := range q.WebhookEndpoints {
		ep, err := e.endpoint(t, q, tenant, "https://hooks.example/"+strconv.Itoa(i))
		require.NoError(t, err, "endpoint %d of %d", i+1, q.WebhookEndpoints)
		if i == 0 {
			first = ep
		}
	}
	_, err := e.endpoint(t, q, tenant, "https://hooks.example/one-more")
	requireQuota(t, err, passport.QuotaWebhookEndpoints, 3, 3)
	require.Equal(t, 3, e.Count(t, `SELECT count(*) FROM webhook_endpoints WHERE tenant_id = $1`, tenant))

	// Another tenant's endpoints are its own count.
	_, err = e.endpoint(t, q, other, "https://hooks.example/0")
	require.NoError(t, err)

	// A deleted endpoint frees its place.
	require.NoError(t, e.Store.DeleteWebhookEndpoint(e.Ctx, tenant, first.WebhookEndpointID))
	_, err = e.endpoint(t, q, tenant, "https://hooks.example/one-more")
	require.NoError(t, err)
}

func TestDuplicateEndpointURLIsAConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := small()
	tenant, other := e.tenant(t), e.tenant(t)
	ep, err := e.endpoint(t, q, tenant, "https://Hooks.Example:443/in?x=1")
	require.NoError(t, err)
	for _, same := range []string{"https://Hooks.Example:443/in?x=1", "https://hooks.example/in?x=1", "HTTPS://HOOKS.EXAMPLE/in?x=1#frag"} {
		_, err = e.endpoint(t, q, tenant, same)
		require.Equal(t, errcode.Conflict, errcode.CodeOf(err), "%s: %v", same, err)
		require.Equal(t, ep.WebhookEndpointID, errcode.As(err).Details["webhook_endpoint_id"])
	}
	// Other paths, queries and ports are other receivers; another tenant
	// may use the same URL.
	for _, url := range []string{"https://hooks.example/IN?x=1", "https://hooks.example/in?x=2"} {
		_, err = e.endpoint(t, q, tenant, url)
		require.NoError(t, err, url)
	}
	_, err = e.endpoint(t, q, other, "https://hooks.example/in?x=1")
	require.NoError(t, err)

	// Moving another endpoint to the URL is the same conflict; keeping
	// one's own URL is not.
	eps, err := e.Store.ListWebhookEndpoints(e.Ctx, tenant)
	require.NoError(t, err)
	err = e.run(t, func(tx passport.Tx) error {
		_, err := passport.UpdateWebhookEndpoint(e.Ctx, tx, q, tenant, eps[1].WebhookEndpointID, "https://hooks.example:443/in?x=1", nil)
		return err
	})
	require.Equal(t, errcode.Conflict, errcode.CodeOf(err), "%v", err)
	require.NoError(t, e.run(t, func(tx passport.Tx) error {
		_, err := passport.UpdateWebhookEndpoint(e.Ctx, tx, q, tenant, ep.WebhookEndpointID, "https://hooks.example/in?x=1", nil)
		return err
	}))

	// A deleted endpoint's URL is free again.
	require.NoError(t, e.Store.DeleteWebhookEndpoint(e.Ctx, tenant, ep.WebhookEndpointID))
	_, err = e.endpoint(t, q, tenant, "https://hooks.example/in?x=1")
	require.NoError(t, err)
}

func TestNormalizeEndpointURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://Hooks.Example":          "https://hooks.example/",
		"HTTP://h.example:80/a":          "http://h.example/a",
		"http://h.example:443/a":         "http://h.example:443/a",
		"https://h.example:8443/A?b=C#d": "https://h.example:8443/A?b=C",
		"https://[::1]:443/x":            "https://[::1]/x",
		"https://h.example./in":          "https://h.example/in",
		"https://h.example/%7euser?":     "https://h.example/~user",
		"https://h.example/a%2Fb":        "https://h.example/a/b",
	} {
		require.Equal(t, want, passport.NormalizeEndpointURL(in), in)
	}
}

// Two creates racing at limit-1: the tenant's row lock lets one pass.
func TestCountQuotasHoldUnderConcurrency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := small()
	q.WebhookEndpoints, q.APIKeys, q.WebhookSubscriptions = 1, 1, 1
	for attempt := range 5 {
		tenant := e.tenant(t)
		anchor, err := e.endpoint(t, passport.DefaultQuotas(), tenant, "https://anchor.example/")
		require.NoError(t, err)
		q.WebhookEndpoints = 2 // the anchor is one: one more fits
		const racers = 6
		var wg sync.WaitGroup
		errs := make([]error, 3*racers)
		start := make(chan struct{})
		for i := range racers {
			wg.Add(3)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = e.endpoint(t, q, tenant, "https://race.example/"+strconv.Itoa(i))
			}()
			go func() {
				defer wg.Done()
				<-start
				_, errs[racers+i] = e.createKeyWith(t, q, passport.NewKey{TenantID: tenant, Name: "k", Role: "reader"})
			}()
			go func() {
				defer wg.Done()
				<-start
				errs[2*racers+i] = e.run(t, func(tx passport.Tx) error {
					_, err := passport.CreateWebhookSubscription(e.Ctx, tx, q, tenant, anchor.WebhookEndpointID, "ev"+strconv.Itoa(i))
					return err
				})
			}()
		}
		close(start)
		wg.Wait()
		for kind := range 3 {
			passed := 0
			for _, err := range errs[kind*racers : (kind+1)*racers] {
				if err == nil {
					passed++
				} else {
					require.Equal(t, errcode.QuotaExceeded, errcode.CodeOf(err), "attempt %d: %v", attempt, err)
				}
			}
			require.Equal(t, 1, passed, "attempt %d, quota %d: one create fits, one passed", attempt, kind)
		}
		require.Equal(t, 2, e.Count(t, `SELECT count(*) FROM webhook_endpoints WHERE tenant_id = $1`, tenant))
		require.Equal(t, 1, e.Count(t, `SELECT count(*) FROM api_keys WHERE tenant_id = $1`, tenant))
		require.Equal(t, 1, e.Count(t, `SELECT count(*) FROM webhook_subscriptions WHERE tenant_id = $1`, tenant))
	}
}

func (e env) createKeyWith(t *testing.T, q passport.Quotas, in passport.NewKey) (passport.CreatedKey, error) {
	t.Helper()
	var k passport.CreatedKey
	err := e.run(t, func(tx passport.Tx) error {
		var err error
		k, err = passport.CreateAPIKey(e.Ctx, tx, q, in, time.Now())
		return err
	})
	return k, err
}

func TestAPIKeyQuotaCountsUnrevokedKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := small()
	tenant := e.tenant(t)
	var keys []passport.CreatedKey
	for range q.APIKeys {
		k, err := e.createKeyWith(t, q, passport.NewKey{TenantID: tenant, Name: "k", Role: "writer"})
		require.NoError(t, err)
		keys = append(keys, k)
	}
	_, err := e.createKeyWith(t, q, passport.NewKey{TenantID: tenant, Name: "k", Role: "writer"})
	requireQuota(t, err, passport.QuotaAPIKeys, 2, 2)
	_, err = e.revokeKey(t, tenant, keys[0].APIKeyID)
	require.NoError(t, err)
	_, err = e.createKeyWith(t, q, passport.NewKey{TenantID: tenant, Name: "k", Role: "writer"})
	require.NoError(t, err, "a revoked key frees its place")
}

func TestSubscriptionQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := small()
	tenant := e.tenant(t)
	ep, err := e.endpoint(t, q, tenant, "https://hooks.example/")
	require.NoError(t, err)
	sub := func(eventType string) error {
		return e.run(t, func(tx passport.Tx) error {
			_, err := passport.CreateWebhookSubscription(e.Ctx, tx, q, tenant, ep.WebhookEndpointID, eventType)
			return err
		})
	}
	for i := range q.WebhookSubscriptions {
		require.NoError(t, sub("ev"+strconv.Itoa(i)))
	}
	requireQuota(t, sub("one.more"), passport.QuotaWebhookSubscriptions, 4, 4)
}

func TestTenantOverridesReplaceDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := small()
	tenant, other := e.tenant(t), e.tenant(t)
	set := func(o passport.QuotaOverrides, reset ...string) (passport.Quotas, error) {
		var got passport.Quotas
		err := e.run(t, func(tx passport.Tx) error {
			var err error
			got, err = passport.SetTenantQuotas(e.Ctx, tx, q, tenant, o, reset)
			return err
		})
		return got, err
	}
	one, big := 1, 9
	got, err := set(passport.QuotaOverrides{APIKeys: &one, QueuedJobs: &big})
	require.NoError(t, err)
	want := q
	want.APIKeys, want.QueuedJobs = 1, 9
	require.Equal(t, want, got)
	read, err := passport.TenantQuotas(e.Ctx, e.Store, q, tenant)
	require.NoError(t, err)
	require.Equal(t, want, read)
	otherQuotas, err := passport.TenantQuotas(e.Ctx, e.Store, q, other)
	require.NoError(t, err)
	require.Equal(t, q, otherQuotas, "another tenant keeps the defaults")

	_, err = e.createKeyWith(t, q, passport.NewKey{TenantID: tenant, Name: "k", Role: "reader"})
	require.NoError(t, err)
	_, err = e.createKeyWith(t, q, passport.NewKey{TenantID: tenant, Name: "k", Role: "reader"})
	requireQuota(t, err, passport.QuotaAPIKeys, 1, 1)

	// A later change keeps the other overrides; reset drops one.
	two := 2
	got, err = set(passport.QuotaOverrides{WebhookEndpoints: &two}, passport.QuotaAPIKeys)
	require.NoError(t, err)
	want.APIKeys, want.WebhookEndpoints = q.APIKeys, 2
	require.Equal(t, want, got)

	// Bounds and names.
	neg, huge := -1, 2_000_000_000
	_, err = set(passport.QuotaOverrides{APIKeys: &neg})
	require.Equal(t, "quotas.api_keys", errcode.As(err).Field, "%v", err)
	_, err = set(passport.QuotaOverrides{QueuedJobs: &huge})
	require.Equal(t, "quotas.queued_jobs", errcode.As(err).Field, "%v", err)
	zero := 0
	_, err = set(passport.QuotaOverrides{EventPayloadBytes: &zero})
	require.Equal(t, "quotas.event_payload_bytes", errcode.As(err).Field, "%v", err)
	_, err = set(passport.QuotaOverrides{}, "api_keys", "colour")
	require.Equal(t, "reset[1]", errcode.As(err).Field, "%v", err)
	read, err = passport.TenantQuotas(e.Ctx, e.Store, q, tenant)
	require.NoError(t, err)
	require.Equal(t, want, read, "a refused change changes nothing")

	_, err = passport.TenantQuotas(e.Ctx, e.Store, q, uuid.New())
	require.Equal(t, errcode.NotFound, errcode.CodeOf(err))
}

func TestEventPayloadQuota(t *testing.T) {
	t.Parallel()
	q := small()
	require.NoError(t, passport.CheckEventPayload("payload", make([]byte, 64), q))
	err := passport.CheckEventPayload("payload", make([]byte, 65), q)
	require.Equal(t, errcode.PayloadTooLarge, errcode.CodeOf(err))
	require.Equal(t, map[string]any{"field": "payload", "quota": "event_payload_bytes", "limit": 64, "used": 65}, errcode.As(err).Details)
}

// The gate admits up to the tenant's queued_jobs, counts a batch whole,
// and frees the places of what was not inserted.
func TestQueueGateAdmitsUpToTheQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := small() // 5 queued jobs
	tenant, other := e.tenant(t), e.tenant(t)
	var gate passport.QueueGate
	gate.TTL = time.Hour // the gate's own accounting, not a recount, must hold the limit
	enqueue := func(tenantID uuid.UUID, n int) error {
		sn, err := e.Store.CreateSnapshot(e.Ctx, tenantID)
		require.NoError(t, err)
		tenants := make([]uuid.UUID, n)
		reqs := make([]passport.EnqueueRequest, n)
		for i := range n {
			tenants[i] = tenantID
			req, err := passport.NewEnqueueRequest(&jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: tenantID}, SnapshotID: sn.SnapshotID}, "", passport.EnqueueOptions{})
			require.NoError(t, err)
			reqs[i] = req
		}
		a, err := gate.Admit(e.Ctx, e.Store, q, tenants)
		if err != nil {
			return err
		}
		res, err := passport.Enqueue(e.Ctx, e.Store, e.River, reqs)
		if err != nil {
			a.Done(nil)
			return err
		}
		a.Done(res)
		return nil
	}
	require.NoError(t, enqueue(tenant, 3))
	err := enqueue(tenant, 3) // 3 + 3 > 5: the whole batch is refused
	requireQuota(t, err, passport.QuotaQueuedJobs, 5, 3)
	require.Equal(t, 1, errcode.As(err).Details["retry_after_seconds"])
	require.NoError(t, enqueue(tenant, 2), "the 5th job fits")
	requireQuota(t, enqueue(tenant, 1), passport.QuotaQueuedJobs, 5, 5)
	require.Equal(t, 5, e.Count(t, `SELECT count(*) FROM jobs WHERE tenant_id = $1`, tenant))
	require.NoError(t, enqueue(other, 5), "another tenant's backlog is its own")

	// A fresh gate counts the database: the same answer.
	var fresh passport.QueueGate
	_, err = fresh.Admit(e.Ctx, e.Store, q, []uuid.UUID{tenant})
	requireQuota(t, err, passport.QuotaQueuedJobs, 5, 5)

	// Concurrent admissions at the limit: exactly the free places pass.
	third := e.tenant(t)
	var wg sync.WaitGroup
	results := make([]error, 12)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = enqueue(third, 1)
		}()
	}
	wg.Wait()
	passed := 0
	for _, err := range results {
		if err == nil {
			passed++
		} else {
			require.Equal(t, errcode.QuotaExceeded, errcode.CodeOf(err), "%v", err)
		}
	}
	require.Equal(t, 5, passed)
	require.Equal(t, 5, e.Count(t, `SELECT count(*) FROM jobs WHERE tenant_id = $1`, third))
}

// One list of quotas: the names, the JSON members of Quotas and
// QuotaOverrides, and the bounds the API documents (tags) and
// SetTenantQuotas checks.
func TestQuotaNamesAndBoundsAgree(t *testing.T) {
	t.Parallel()
	limits, overrides := reflect.TypeFor[passport.Quotas](), reflect.TypeFor[passport.QuotaOverrides]()
	require.Equal(t, len(passport.QuotaNames), limits.NumField())
	require.Equal(t, len(passport.QuotaNames), overrides.NumField())
	for i, name := range passport.QuotaNames {
		require.Equal(t, name, limits.Field(i).Tag.Get("json"))
		o := overrides.Field(i)
		require.Equal(t, name+",omitempty", o.Tag.Get("json"))
		lo, hi, ok := passport.QuotaBounds(name)
		require.True(t, ok, name)
		require.Equal(t, strconv.Itoa(lo), o.Tag.Get("minimum"), name)
		require.Equal(t, strconv.Itoa(hi), o.Tag.Get("maximum"), name)
		require.Positive(t, passport.DefaultQuotas().Limit(name), name)
	}
	_, _, ok := passport.QuotaBounds("colour")
	require.False(t, ok)
}

// Jobs another process enqueued count once the gate's reading is older
// than its TTL: the lag across processes is one TTL.
func TestQueueGateRecountsAfterItsTTL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	q := small() // 5 queued jobs
	tenant := e.tenant(t)
	sn, err := e.Store.CreateSnapshot(e.Ctx, tenant)
	require.NoError(t, err)
	elsewhere := func(n int) {
		reqs := make([]passport.EnqueueRequest, n)
		for i := range reqs {
			reqs[i], err = passport.NewEnqueueRequest(&jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: tenant}, SnapshotID: sn.SnapshotID}, "", passport.EnqueueOptions{})
			require.NoError(t, err)
		}
		_, err := passport.Enqueue(e.Ctx, e.Store, e.River, reqs)
		require.NoError(t, err)
	}
	gate := passport.QueueGate{TTL: 50 * time.Millisecond}
	a, err := gate.Admit(e.Ctx, e.Store, q, []uuid.UUID{tenant})
	require.NoError(t, err)
	a.Done(nil)
	elsewhere(5)
	time.Sleep(2 * gate.TTL)
	_, err = gate.Admit(e.Ctx, e.Store, q, []uuid.UUID{tenant})
	requireQuota(t, err, passport.QuotaQueuedJobs, 5, 5)

	// A quota raised by the platform counts after Forget.
	ten := 10
	require.NoError(t, e.run(t, func(tx passport.Tx) error {
		_, err := passport.SetTenantQuotas(e.Ctx, tx, q, tenant, passport.QuotaOverrides{QueuedJobs: &ten}, nil)
		return err
	}))
	gate.Forget(tenant)
	a, err = gate.Admit(e.Ctx, e.Store, q, []uuid.UUID{tenant, tenant, tenant, tenant, tenant})
	require.NoError(t, err)
	a.Done(nil)
}
