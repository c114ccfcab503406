package access

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// budgets is a key Limiter and a TenantLimiter on one fake clock whose
// tenants' budgets a test may change (an override).
type budgets struct {
	keys    *Limiter
	tenants *TenantLimiter
	clk     *clock

	mu       sync.Mutex
	override map[uuid.UUID]Budget
	failing  bool
}

// newBudgets returns keys of keyRPS/keyBurst and tenants of tenant by
// default. Rates are per second; a tiny rate makes a bucket that does not
// refill within a test.
func newBudgets(keyRPS float64, keyBurst int, tenant Budget) *budgets {
	b := &budgets{clk: &clock{t: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}, override: map[uuid.UUID]Budget{}}
	b.keys = NewLimiter(keyRPS, keyBurst)
	b.keys.now = b.clk.now
	b.tenants = NewTenantLimiter(tenant, func(_ context.Context, id uuid.UUID) (Budget, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.failing {
			return Budget{}, errors.New("database unavailable")
		}
		if o, ok := b.override[id]; ok {
			return o, nil
		}
		return tenant, nil
	})
	b.tenants.now = b.clk.now
	return b
}

func (b *budgets) take(key string, tenant uuid.UUID, n, paid int) Decision {
	return Take(context.Background(), b.keys, b.tenants, Charge{Key: key, Tenant: tenant, N: n, Paid: paid})
}

// request is one request of key: what authentication takes.
func (b *budgets) request(key string, tenant uuid.UUID) Decision { return b.take(key, tenant, 1, 0) }

// batch is a batch of jobs jobs sent with key: one request at
// authentication, then the rest of its jobs, as the API charges them.
func (b *budgets) batch(key string, tenant uuid.UUID, jobs int) Decision {
	if d := b.request(key, tenant); !d.OK {
		return d
	}
	return b.take(key, tenant, jobs-1, 1)
}

func (b *budgets) setOverride(tenant uuid.UUID, budget Budget) {
	b.mu.Lock()
	b.override[tenant] = budget
	b.mu.Unlock()
}

// A tenant's keys share its budget: however many keys, exactly its burst
// of requests pass, then every key is refused with the tenant named; other
// tenants are not touched.
func TestTenantBudgetIsSharedByTheTenantsKeys(t *testing.T) {
	t.Parallel()
	b := newBudgets(1e-3, 4, Budget{RPS: 1e-3, Burst: 10})
	tenant, other := uuid.New(), uuid.New()
	keys := []string{"k1", "k2", "k3", "k4", "k5", "k6"}

	passed := 0
	var refused Decision
	for i := 0; ; i++ {
		d := b.request(keys[i%len(keys)], tenant)
		if !d.OK {
			refused = d
			break
		}
		passed++
		require.Less(t, passed, 100, "the tenant's budget never refused")
	}
	require.Equal(t, 10, passed, "six keys of burst 4 together get the tenant's burst, no more")
	require.Equal(t, "tenant", refused.Limited)
	require.False(t, refused.Never)
	require.Equal(t, 1000*time.Second, refused.RetryAfter, "one token at 0.001/s")
	for _, k := range append(keys, "a-new-key") {
		require.False(t, b.request(k, tenant).OK, "%s: the tenant is out, whichever key asks", k)
	}

	for i := range 4 {
		require.True(t, b.request("k-other", other).OK, "another tenant's request %d", i+1)
	}
	d := b.request("k-other", other)
	require.Equal(t, Decision{Limited: "key", RetryAfter: 1000 * time.Second}, d, "the other tenant's key meets its own limit")
}

// A request refused by one budget takes nothing from the other.
func TestRefusedRequestCostsTheOtherBudgetNothing(t *testing.T) {
	t.Parallel()
	b := newBudgets(1e-3, 4, Budget{RPS: 1e-3, Burst: 10})
	tenant := uuid.New()

	// The key's own limit refuses: the tenant keeps its tokens.
	for range 4 {
		require.True(t, b.request("k1", tenant).OK)
	}
	for range 20 {
		require.Equal(t, "key", b.request("k1", tenant).Limited)
	}
	for i := range 4 {
		require.True(t, b.request("k2", tenant).OK, "k2 %d", i+1)
	}
	require.Equal(t, 2, countPassing(b, "k3", tenant), "4 + 4 + 2 of the tenant's 10: k1's 20 refusals took none")

	// The tenant's budget refuses: the key keeps its tokens. k4 has 4,
	// and the tenant gets a larger budget, as an override would give it.
	for range 20 {
		require.Equal(t, "tenant", b.request("k4", tenant).Limited)
	}
	b.setOverride(tenant, Budget{RPS: 1000, Burst: 100})
	b.clk.add(b.tenants.Refresh)
	require.False(t, b.request("k5", tenant).OK, "the new rate runs from the refresh; nothing accrued yet")
	b.clk.add(100 * time.Millisecond)
	require.Equal(t, 4, countPassing(b, "k4", tenant), "k4's 20 refusals took nothing of its own 4")
	d := b.request("k4", tenant)
	require.Equal(t, "key", d.Limited)
}

func countPassing(b *budgets, key string, tenant uuid.UUID) int {
	n := 0
	for b.request(key, tenant).OK {
		n++
		if n > 1000 {
			break
		}
	}
	return n
}

// A batch of K jobs costs K of both budgets; one the budget cannot hold
// now is refused with an honest Retry-After and takes only its request;
// one over a burst can never pass.
func TestBatchCostsOneTokenPerJob(t *testing.T) {
	t.Parallel()
	b := newBudgets(1e-3, 50, Budget{RPS: 1, Burst: 10})
	tenant := uuid.New()

	require.True(t, b.batch("k1", tenant, 4).OK)
	d := b.batch("k2", tenant, 7)
	require.False(t, d.OK)
	require.Equal(t, "tenant", d.Limited)
	// 6 were left; its request took one: 5. Sent again, it needs 7.
	require.Equal(t, 2*time.Second, d.RetryAfter)
	require.True(t, b.batch("k2", tenant, 5).OK, "the refused batch gave back its jobs' tokens")
	require.False(t, b.request("k3", tenant).OK, "4 + 1 + 5: the tenant is out")
	b.clk.add(2 * time.Second)
	require.True(t, b.batch("k2", tenant, 2).OK, "refilled at the tenant's rate")

	// The keys paid for their jobs too: k1 has 50 - 4 left.
	b.setOverride(tenant, Budget{RPS: 1e6, Burst: 1000})
	b.clk.add(b.tenants.Refresh)
	b.request("k9", tenant) // takes the new budget
	b.clk.add(time.Millisecond)
	require.True(t, b.batch("k1", tenant, 46).OK)
	d = b.request("k1", tenant)
	require.Equal(t, "key", d.Limited, "4 + 46 jobs: k1 is out")

	// Over a burst: never, whatever the wait; it takes nothing.
	d = b.take("k2", tenant, 50, 1)
	require.Equal(t, Decision{Limited: "key", Never: true, Burst: 50}, d)
	b.setOverride(tenant, Budget{RPS: 1e-3, Burst: 10})
	b.clk.add(b.tenants.Refresh)
	b.request("k8", tenant)
	d = b.take("k3", tenant, 10, 1)
	require.Equal(t, Decision{Limited: "tenant", Never: true, Burst: 10}, d)
	require.True(t, b.take("k3", tenant, 9, 1).OK, "exactly the burst passes")
}

func TestTenantLimiterBounds(t *testing.T) {
	t.Parallel()
	require.True(t, Take(context.Background(), nil, nil, Charge{Key: "k", Tenant: uuid.New(), N: 1000}).OK, "no limiters, no limit")

	b := newBudgets(1e6, 1000, Budget{RPS: 1, Burst: 1})
	unlimited := uuid.New()
	b.setOverride(unlimited, Budget{RPS: 0})
	for range 50 {
		require.True(t, b.request("k", unlimited).OK, "an override of 0 RPS is no limit")
	}

	// A failing lookup keeps the budget a tenant had, and gives a new
	// tenant the default.
	known := uuid.New()
	b.setOverride(known, Budget{RPS: 1, Burst: 3})
	require.True(t, b.request("k", known).OK)
	b.mu.Lock()
	b.failing = true
	b.mu.Unlock()
	b.clk.add(b.tenants.Refresh)
	require.Equal(t, 3, countPassing(b, "k", known), "1 of 3 taken, 1 s refilled one: its budget of 3 is kept")
	require.Equal(t, 1, countPassing(b, "k", uuid.New()), "the default burst of 1")

	// Full buckets are dropped when the table is full; tenants in debt
	// beyond it share the overflow bucket.
	b = newBudgets(1e6, 1000, Budget{RPS: 1, Burst: 1})
	b.tenants.max = 3
	for range 3 {
		require.True(t, b.request("k", uuid.New()).OK)
	}
	require.True(t, b.request("k", uuid.New()).OK, "the overflow bucket")
	require.False(t, b.request("k", uuid.New()).OK, "the overflow bucket is shared")
	b.clk.add(2 * time.Second)
	require.True(t, b.request("k", uuid.New()).OK)
	require.Len(t, b.tenants.buckets, 1, "the recovered buckets were dropped for the new tenant's")
}

// BenchmarkTake is the cost of a tenant key's admission (its key's bucket
// and its tenant's) beside the key's bucket alone (BenchmarkLimiterAllow).
func BenchmarkTake(b *testing.B) {
	keys, tenants := NewLimiter(1e9, 1e9), NewTenantLimiter(Budget{RPS: 1e9, Burst: 1e9}, nil)
	tenant := uuid.New()
	for b.Loop() {
		Take(context.Background(), keys, tenants, Charge{Key: "key:k", Tenant: tenant, N: 1})
	}
}

func BenchmarkLimiterAllow(b *testing.B) {
	keys := NewLimiter(1e9, 1e9)
	for b.Loop() {
		keys.Allow("key:k")
	}
}
