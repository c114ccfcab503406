package passport

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/store"
)

// DefaultQueueGateTTL is how long QueueGate reuses a tenant's count.
const DefaultQueueGateTTL = time.Second

// QueueGate admits a tenant's new jobs while its QUEUED jobs stay within
// its queued_jobs quota, and refuses the whole enqueue otherwise: 429
// QUOTA_EXCEEDED (QueuedJobsExceeded), nothing enqueued.
//
// Counting on every enqueue would add a round trip and a scan of up to
// the limit's rows to the hot path, so the count is taken at most once
// per TTL and tenant (two reads: the tenant's quotas and its QUEUED jobs,
// counted up to the limit), and between counts the process keeps it
// current itself: an enqueue first reserves its jobs under the gate's
// mutex — admitted only if counted + reserved + new ≤ limit — and on
// return adds the jobs it inserted to the count. So within one process
// the limit is exact, concurrent enqueues included; across processes a
// tenant can pass it by what the other processes admit within one TTL,
// and jobs that started meanwhile free their places at the next count.
// Exact across the fleet would need the tenant's row lock and a count in
// every enqueue's transaction, serialising each tenant's enqueues.
type QueueGate struct {
	// TTL is how long a count is reused (DefaultQueueGateTTL when zero).
	TTL time.Duration

	mu       sync.Mutex
	byTenant map[uuid.UUID]*backlog
}

// backlog is what the gate knows of one tenant.
type backlog struct {
	limit    int
	queued   int // QUEUED jobs counted (up to limit), plus those admitted since
	reserved int // admitted jobs whose enqueue has not returned
	at       time.Time
	// refreshing: one enqueue is counting; the others go on with this
	// reading meanwhile, rather than all counting at once.
	refreshing bool
	// sinceCount are the jobs admitted since the running count began: its
	// snapshot may not hold them, so they are added to what it reads
	// (counted twice when it does: refused early, for one TTL, never late).
	sinceCount int
}

// Admission is a reservation of places in tenants' backlogs; Done ends it.
type Admission struct {
	g *QueueGate
	n map[uuid.UUID]int
	// b are the backlogs the places were reserved in (a Forget may have
	// replaced the gate's since).
	b map[uuid.UUID]*backlog
}

// Admit reserves a place for each job, given by its tenant, or refuses
// them all with the first tenant whose queued_jobs quota they would pass.
// Call Done with the enqueue's results once it returns.
func (g *QueueGate) Admit(ctx context.Context, q *store.Queries, defaults Quotas, tenants []uuid.UUID) (Admission, error) {
	n := map[uuid.UUID]int{}
	var order []uuid.UUID
	for _, t := range tenants {
		if n[t] == 0 {
			order = append(order, t)
		}
		n[t]++
	}
	a := Admission{g: g, n: map[uuid.UUID]int{}, b: map[uuid.UUID]*backlog{}}
	for _, t := range order {
		b, err := g.reserve(ctx, q, defaults, t, n[t])
		if err != nil {
			a.Done(nil)
			return Admission{}, err
		}
		a.n[t], a.b[t] = n[t], b
	}
	return a, nil
}

// reserve reserves n places in the tenant's backlog and returns it,
// counting it first when the gate's count is older than the TTL (and no
// other enqueue is counting it).
func (g *QueueGate) reserve(ctx context.Context, q *store.Queries, defaults Quotas, tenantID uuid.UUID, n int) (*backlog, error) {
	ttl := g.TTL
	if ttl <= 0 {
		ttl = DefaultQueueGateTTL
	}
	g.mu.Lock()
	b := g.byTenant[tenantID]
	count := b == nil || (time.Since(b.at) >= ttl && !b.refreshing)
	if count && b != nil {
		b.refreshing, b.sinceCount = true, 0
	}
	g.mu.Unlock()
	if count {
		quotas, err := TenantQuotas(ctx, q, defaults, tenantID)
		var queued int
		if err == nil {
			queued, err = q.CountQueuedJobs(ctx, tenantID, quotas.QueuedJobs)
		}
		if err != nil {
			if b != nil {
				g.mu.Lock()
				b.refreshing = false
				g.mu.Unlock()
			}
			return nil, err
		}
		g.mu.Lock()
		if g.byTenant == nil {
			g.byTenant = map[uuid.UUID]*backlog{}
		}
		if b = g.byTenant[tenantID]; b == nil {
			g.evictIdle(ttl)
			b = &backlog{}
			g.byTenant[tenantID] = b
		}
		// Jobs admitted while the count ran are added to it (sinceCount),
		// and it may include jobs of enqueues still reserved that
		// committed before it: the gate then refuses a little early, for
		// one TTL at most, never late.
		b.limit, b.queued, b.at, b.refreshing = quotas.QueuedJobs, queued+b.sinceCount, time.Now(), false
		g.mu.Unlock()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if used := b.queued + b.reserved; used+n > b.limit {
		return nil, QueuedJobsExceeded(b.limit, min(used, b.limit))
	}
	b.reserved += n
	return b, nil
}

// Done ends the reservation: the jobs results show inserted (not
// Existing) join their tenants' counts; the other places are freed. nil
// results (the enqueue failed) free every place.
func (a Admission) Done(results []EnqueueResult) {
	if a.g == nil || len(a.n) == 0 {
		return
	}
	inserted := map[uuid.UUID]int{}
	for _, r := range results {
		if !r.Existing {
			inserted[r.Job.TenantID]++
		}
	}
	a.settle(inserted)
}

// DoneInserted is Done for an operation that inserted n jobs of one
// tenant, which may be more than it reserved places for: an event's
// deliveries, one per subscribed endpoint (bounded by the
// webhook_endpoints quota), known only once it is appended. The event is
// admitted while the backlog has room for one job; its deliveries then
// count against the next enqueues.
func (a Admission) DoneInserted(tenantID uuid.UUID, n int) {
	if a.g == nil || len(a.n) == 0 {
		return
	}
	a.settle(map[uuid.UUID]int{tenantID: n})
}

func (a Admission) settle(inserted map[uuid.UUID]int) {
	a.g.mu.Lock()
	defer a.g.mu.Unlock()
	for t, n := range a.n {
		b := a.b[t]
		b.reserved -= n
		b.queued += inserted[t]
		b.sinceCount += inserted[t]
	}
}

// Forget drops what the gate knows of a tenant, so that its next enqueue
// counts again: after its quotas changed.
func (g *QueueGate) Forget(tenantID uuid.UUID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.byTenant, tenantID)
}

// QueuedJobsExceeded is QuotaExceeded for the queued_jobs quota, which
// frees itself as the backlog drains: the details carry
// retry_after_seconds, and the API answers it 429 with Retry-After.
func QueuedJobsExceeded(limit, used int) error {
	e := QuotaExceeded(QuotaQueuedJobs, limit, used)
	e.Message = fmt.Sprintf("quota queued_jobs of %d reached (%d queued): nothing was enqueued; retry once the backlog drains", limit, used)
	e.Details["retry_after_seconds"] = 1
	return e
}

// maxIdleTenants bounds the tenants QueueGate remembers: past it, a new
// tenant's first count drops every tenant whose count is stale and that
// holds no reservation (it would be counted afresh anyway), so that the
// map does not grow with every tenant that ever enqueued.
const maxIdleTenants = 10_000

// evictIdle drops the stale, unreserved tenants once the gate holds
// maxIdleTenants. g.mu is held.
func (g *QueueGate) evictIdle(ttl time.Duration) {
	if len(g.byTenant) < maxIdleTenants {
		return
	}
	for id, b := range g.byTenant {
		if b.reserved == 0 && time.Since(b.at) >= ttl {
			delete(g.byTenant, id)
		}
	}
}
