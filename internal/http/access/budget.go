package access

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/time/rate"
)

// Budget is the size of a token bucket: RPS tokens a second on average,
// Burst at once. An RPS that is not positive is no limit.
type Budget struct {
	RPS   float64
	Burst int
}

// TenantBudgets returns the request budget of a tenant: the seam where a
// tenant's own budget (a platform override) replaces the default. It is
// called when a tenant's bucket is made and then at most once per
// TenantLimiter.Refresh while the tenant makes requests, never once per
// request; an error keeps the budget the bucket has (the default for a new
// bucket).
type TenantBudgets func(ctx context.Context, tenantID uuid.UUID) (Budget, error)

// FixedBudget returns TenantBudgets giving every tenant b (the defaults,
// BPC_TENANT_RATE_LIMIT_RPS and BPC_TENANT_RATE_LIMIT_BURST).
func FixedBudget(b Budget) TenantBudgets {
	return func(context.Context, uuid.UUID) (Budget, error) { return b, nil }
}

// TenantLimiter is the request budget of each tenant that all its API keys
// share, on top of each key's own (SPEC §15): a token bucket per tenant,
// sized by TenantBudgets. Without it a tenant admin mints keys until the
// per-key limits add up to whatever the tenant wants.
//
// Like the key limits it lives in the process: a fleet of N API processes
// admits up to N times a tenant's budget when its requests are spread over
// them. The buckets are bounded like a Limiter's: at the bound, full
// buckets (the same as new ones) are dropped at most once a second, and new
// tenants share one overflow bucket of the default budget while none is
// full. It is safe for concurrent use; a nil TenantLimiter admits
// everything.
type TenantLimiter struct {
	// Refresh is how long a tenant's budget is trusted before it is asked
	// for again: a changed override takes effect within it.
	Refresh time.Duration

	budgets  TenantBudgets
	fallback Budget
	max      int
	now      func() time.Time

	mu       sync.Mutex
	buckets  map[uuid.UUID]*tenantBucket
	overflow *rate.Limiter
	swept    time.Time
}

type tenantBucket struct {
	lim     *rate.Limiter // nil: the tenant's budget is no limit
	budget  Budget
	checked time.Time
}

// NewTenantLimiter returns a TenantLimiter whose tenants' budgets are
// budgets' (fallback when it fails, or when it is nil).
func NewTenantLimiter(fallback Budget, budgets TenantBudgets) *TenantLimiter {
	if budgets == nil {
		budgets = FixedBudget(fallback)
	}
	return &TenantLimiter{Refresh: time.Second, budgets: budgets, fallback: fallback, max: 100000, now: time.Now,
		buckets: map[uuid.UUID]*tenantBucket{}, overflow: newBucket(fallback)}
}

// newBucket is a bucket of budget b, or nil when b is no limit.
func newBucket(b Budget) *rate.Limiter {
	if b.RPS <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(b.RPS), max(b.Burst, 1))
}

// Charge is what one request of a tenant key costs: N tokens from its key's
// bucket (Key, in a Limiter) and from its tenant's (Tenant). Paid is what
// the request already took from both (1 at authentication, when a batch
// then pays for its jobs): it counts towards whether the request could ever
// pass and towards its Retry-After, since a retry pays it again.
type Charge struct {
	Key    string
	Tenant uuid.UUID
	N      int
	Paid   int
}

// Decision is whether a Charge was taken.
type Decision struct {
	OK bool
	// Limited names the budget that refused: "key" or "tenant".
	Limited string
	// RetryAfter is how long until both budgets hold the whole cost again
	// (when no other request takes from them meanwhile).
	RetryAfter time.Duration
	// Never is set when the cost is over the refusing budget's burst, Burst:
	// no wait makes the request pass.
	Never bool
	Burst int
}

// Take takes c.N tokens from the key's bucket in keys and from the
// tenant's in tenants, both or neither: a request refused by one budget
// costs the other nothing. Either may be nil (no limit).
func Take(ctx context.Context, keys *Limiter, tenants *TenantLimiter, c Charge) Decision {
	var buckets [2]*rate.Limiter
	scopes := [2]string{"key", "tenant"}
	now := time.Now()
	if keys != nil {
		now = keys.now()
		buckets[0] = keys.bucket(c.Key, now)
	}
	if tenants != nil {
		now = tenants.now()
		buckets[1] = tenants.bucket(ctx, c.Tenant, now)
	}
	whole := c.N + c.Paid
	for i, b := range buckets {
		if b != nil && whole > b.Burst() {
			return Decision{Limited: scopes[i], Never: true, Burst: b.Burst()}
		}
	}
	var taken [2]*rate.Reservation
	refused := -1
	for i, b := range buckets {
		if b == nil {
			continue
		}
		r := b.ReserveN(now, c.N)
		taken[i] = r
		if !r.OK() || r.DelayFrom(now) > 0 {
			refused = i
		}
	}
	if refused < 0 {
		return Decision{OK: true}
	}
	d := Decision{Limited: scopes[refused]}
	for i, r := range taken {
		if r == nil {
			continue
		}
		r.CancelAt(now)
		if wait := waitFor(buckets[i], whole, now); wait > d.RetryAfter {
			d.Limited, d.RetryAfter = scopes[i], wait
		}
	}
	return d
}

// waitFor is how long until b holds n tokens.
func waitFor(b *rate.Limiter, n int, now time.Time) time.Duration {
	missing := float64(n) - b.TokensAt(now)
	if missing <= 0 {
		return 0
	}
	return time.Duration(math.Ceil(missing / float64(b.Limit()) * float64(time.Second)))
}

// bucket returns tenantID's bucket (nil: no limit), making it on first use
// and resizing it to the tenant's budget when it was last asked for longer
// than Refresh ago. The budget is asked for outside the lock: it may read
// the database.
func (t *TenantLimiter) bucket(ctx context.Context, tenantID uuid.UUID, now time.Time) *rate.Limiter {
	t.mu.Lock()
	b, ok := t.buckets[tenantID]
	if ok && now.Sub(b.checked) < t.Refresh {
		t.mu.Unlock()
		return b.lim
	}
	if ok {
		// The other requests of the tenant keep the budget it has while
		// this one asks.
		b.checked = now
	}
	t.mu.Unlock()

	budget, err := t.budgets(ctx, tenantID)
	if err != nil {
		budget = t.fallback
		if ok {
			budget = b.budget
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if b, ok := t.buckets[tenantID]; ok {
		switch {
		case b.budget == budget:
		case b.lim == nil || budget.RPS <= 0:
			b.lim = newBucket(budget)
		default:
			b.lim.SetLimitAt(now, rate.Limit(budget.RPS))
			b.lim.SetBurstAt(now, max(budget.Burst, 1))
		}
		b.budget, b.checked = budget, now
		return b.lim
	}
	if len(t.buckets) >= t.max && now.Sub(t.swept) >= time.Second {
		t.swept = now
		for id, b := range t.buckets {
			if b.lim == nil || b.lim.TokensAt(now) >= float64(b.lim.Burst()) {
				delete(t.buckets, id)
			}
		}
	}
	if len(t.buckets) >= t.max {
		return t.overflow
	}
	b = &tenantBucket{lim: newBucket(budget), budget: budget, checked: now}
	t.buckets[tenantID] = b
	return b.lim
}
