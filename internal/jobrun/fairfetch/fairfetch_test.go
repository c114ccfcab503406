package fairfetch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivershared/riverpilot"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/jobrun/fairfetch"
	"github.com/bpc-platform/bpc/internal/testdb"
)

const queue = "fair"

// fairArgs is a job of a tenant, numbered so that a test can name it.
type fairArgs struct {
	TenantID string `json:"tenant_id,omitempty"`
	N        int    `json:"n"`
}

func (fairArgs) Kind() string { return "FAIR_TEST" }

// otherArgs is a second kind, for the kinds filter.
type otherArgs struct {
	TenantID string `json:"tenant_id"`
	N        int    `json:"n"`
}

func (otherArgs) Kind() string { return "FAIR_OTHER" }

// job is what a fetch returned of one job: its tenant and number.
type job struct {
	Tenant string
	N      int
}

func (j job) String() string { return fmt.Sprintf("%s%d", j.Tenant, j.N) }

type setup struct {
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
}

func newSetup(t *testing.T) setup {
	t.Helper()
	pool := testdb.New(t)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	return setup{pool: pool, client: client}
}

// insert inserts one job per args, in order, each scheduled a millisecond
// after the previous one (River's order within a priority is scheduled_at,
// then id), at priority 2 unless opts say otherwise.
func (s setup) insert(t *testing.T, opts *river.InsertOpts, args ...river.JobArgs) {
	t.Helper()
	base := time.Now().Add(-time.Hour)
	params := make([]river.InsertManyParams, len(args))
	for i, a := range args {
		o := river.InsertOpts{Queue: queue, Priority: 2, ScheduledAt: base.Add(time.Duration(i) * time.Millisecond)}
		if opts != nil {
			if opts.Priority != 0 {
				o.Priority = opts.Priority
			}
			if !opts.ScheduledAt.IsZero() {
				o.ScheduledAt = opts.ScheduledAt
			}
		}
		params[i] = river.InsertManyParams{Args: a, InsertOpts: &o}
	}
	_, err := s.client.InsertManyFast(context.Background(), params)
	require.NoError(t, err)
	// River inserts a job with a scheduled_at as scheduled, and its
	// scheduler makes it available once due: as it would now.
	_, err = s.pool.Exec(context.Background(), `UPDATE river_job SET state = 'available'
		WHERE state = 'scheduled' AND scheduled_at <= now()`)
	require.NoError(t, err)
}

// tid is the tenant id of the tenant a test calls name (a letter): the
// mirror keeps tenant ids as uuids. The empty name is no tenant.
func tid(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf("%08x-0000-4000-8000-000000000000", name[0])
}

// tenantName is tid's inverse.
func tenantName(id string) string {
	var c byte
	if id == "" {
		return ""
	}
	_, err := fmt.Sscanf(id[:8], "%08x", &c)
	if err != nil {
		return "?" + id
	}
	return string(rune(c))
}

func jobsOf(tenant string, from, to int) []river.JobArgs {
	var out []river.JobArgs
	for n := from; n <= to; n++ {
		out = append(out, fairArgs{TenantID: tid(tenant), N: n})
	}
	return out
}

// fetch runs one fair fetch of queue as River's producer would.
func (s setup) fetch(t *testing.T, caps map[string]int, p riverdriver.JobGetAvailableParams) *riverdriver.JobGetAvailableResult {
	t.Helper()
	if p.Queue == "" {
		p.Queue = queue
	}
	if p.ClientID == "" {
		p.ClientID = "client-1"
	}
	if p.MaxAttemptedBy == 0 {
		p.MaxAttemptedBy = 100
	}
	pilot := fairfetch.Wrap(riverpgxv5.New(s.pool), s.pool, caps).PluginPilot()
	res, err := pilot.JobGetAvailable(context.Background(), nil, nil, &p)
	require.NoError(t, err)
	return res
}

func decoded(t *testing.T, res *riverdriver.JobGetAvailableResult) []job {
	t.Helper()
	out := make([]job, len(res.Jobs))
	for i, row := range res.Jobs {
		var a fairArgs
		require.NoError(t, json.Unmarshal(row.EncodedArgs, &a))
		out[i] = job{Tenant: tenantName(a.TenantID), N: a.N}
	}
	return out
}

func names(js []job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.String()
	}
	return out
}

func (s setup) countState(t *testing.T, state rivertype.JobState) int {
	t.Helper()
	var n int
	require.NoError(t, s.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM river_job WHERE queue = $1 AND state = $2`, queue, state).Scan(&n))
	return n
}

// One round per tenant before anyone's second job: a backlog of 10 does not
// keep two small tenants waiting, and the rest of it stays available.
func TestRoundRobinAcrossTenants(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	s.insert(t, nil, jobsOf("A", 1, 10)...)
	s.insert(t, nil, jobsOf("B", 1, 2)...)
	s.insert(t, nil, jobsOf("C", 1, 1)...)

	got := decoded(t, s.fetch(t, nil, riverdriver.JobGetAvailableParams{MaxToLock: 5}))
	require.Equal(t, []string{"A1", "B1", "C1", "A2", "B2"}, names(got))
	require.Equal(t, 8, s.countState(t, rivertype.JobStateAvailable))

	// The next fetch goes on where this one stopped: only A has work left.
	got = decoded(t, s.fetch(t, nil, riverdriver.JobGetAvailableParams{MaxToLock: 3}))
	require.Equal(t, []string{"A3", "A4", "A5"}, names(got))
}

// River's fetch of the same jobs is first come first served: the contrast
// the fair fetch exists for (and the check that the setup above is one
// where it matters).
func TestRiverFetchIsFirstComeFirstServed(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	s.insert(t, nil, jobsOf("A", 1, 10)...)
	s.insert(t, nil, jobsOf("B", 1, 2)...)
	res, err := riverpgxv5.New(s.pool).GetExecutor().JobGetAvailable(context.Background(),
		&riverdriver.JobGetAvailableParams{Queue: queue, ClientID: "c", MaxAttemptedBy: 100, MaxToLock: 5})
	require.NoError(t, err)
	require.Equal(t, []string{"A1", "A2", "A3", "A4", "A5"}, names(decoded(t, res)))
}

// Within a tenant River's order holds (priority first); across tenants a
// round is ordered by priority, so a tenant's urgent job is never behind
// another tenant's less urgent one, and only a tenant's second job waits
// for the others' first.
func TestPriority(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	s.insert(t, &river.InsertOpts{Priority: 4}, jobsOf("A", 1, 3)...)
	s.insert(t, &river.InsertOpts{Priority: 1}, jobsOf("A", 4, 5)...)
	s.insert(t, &river.InsertOpts{Priority: 3}, jobsOf("B", 1, 1)...)
	s.insert(t, &river.InsertOpts{Priority: 2}, jobsOf("C", 1, 1)...)

	got := decoded(t, s.fetch(t, nil, riverdriver.JobGetAvailableParams{MaxToLock: 5}))
	require.Equal(t, []string{"A4", "C1", "B1", "A5", "A1"}, names(got))
}

// When more tenants have work than the producer has room, those with the
// fewest jobs running go first, then those whose first job comes first in
// River's order.
func TestMoreTenantsThanRoom(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	for _, tenant := range []string{"D", "C", "B", "A"} {
		s.insert(t, nil, jobsOf(tenant, 1, 2)...)
	}
	// insert schedules each batch from the same base: make the order of
	// the tenants' first jobs D, C, B, A, whatever the ids' order.
	for i, tenant := range []string{"D", "C", "B", "A"} {
		_, err := s.pool.Exec(context.Background(), `UPDATE river_job
			SET scheduled_at = now() - interval '1 hour' + make_interval(secs => $2 * 10 + (args->>'n')::int)
			WHERE args->>'tenant_id' = $1`, tid(tenant), i)
		require.NoError(t, err)
	}
	got := decoded(t, s.fetch(t, nil, riverdriver.JobGetAvailableParams{MaxToLock: 2}))
	require.Equal(t, []string{"D1", "C1"}, names(got))
	got = decoded(t, s.fetch(t, nil, riverdriver.JobGetAvailableParams{MaxToLock: 2}))
	require.Equal(t, []string{"B1", "A1"}, names(got), "D and C have a job running, B and A none")
	got = decoded(t, s.fetch(t, nil, riverdriver.JobGetAvailableParams{MaxToLock: 4}))
	require.Equal(t, []string{"D2", "C2", "B2", "A2"}, names(got))
}

// The noisy neighbour in one queue: A fills the workers and has a backlog;
// B's one job, inserted after all of A's, takes the next free worker.
// River's own order would start it after A's whole backlog.
func TestFewestRunningFirst(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	s.insert(t, nil, jobsOf("A", 1, 50)...)
	got := decoded(t, s.fetch(t, nil, riverdriver.JobGetAvailableParams{MaxToLock: 4}))
	require.Equal(t, []string{"A1", "A2", "A3", "A4"}, names(got), "alone, A takes every worker")
	s.insert(t, nil, jobsOf("B", 1, 3)...)
	_, err := s.pool.Exec(context.Background(), `UPDATE river_job SET scheduled_at = now() WHERE args->>'tenant_id' = $1`, tid("B"))
	require.NoError(t, err)

	// One worker frees: B (nothing running) before A (four running).
	_, err = s.pool.Exec(context.Background(), `UPDATE river_job SET state = 'completed', finalized_at = now()
		WHERE args->>'tenant_id' = $1 AND args->>'n' = '1'`, tid("A"))
	require.NoError(t, err)
	got = decoded(t, s.fetch(t, nil, riverdriver.JobGetAvailableParams{MaxToLock: 1}))
	require.Equal(t, []string{"B1"}, names(got))
	// Three more free: B goes up to A's three running, then they alternate.
	got = decoded(t, s.fetch(t, nil, riverdriver.JobGetAvailableParams{MaxToLock: 4}))
	require.Equal(t, []string{"B2", "B3", "A5", "A6"}, names(got))
}

// Jobs without a tenant (the maintenance jobs) are a tenant of their own.
func TestJobsWithoutTenant(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	s.insert(t, nil, jobsOf("A", 1, 3)...)
	s.insert(t, nil, jobsOf("", 1, 2)...)
	got := decoded(t, s.fetch(t, nil, riverdriver.JobGetAvailableParams{MaxToLock: 3}))
	require.Equal(t, []string{"A1", "1", "A2"}, names(got))
}

func TestKindsFilter(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	s.insert(t, nil, fairArgs{TenantID: tid("A"), N: 1}, otherArgs{TenantID: tid("A"), N: 2}, otherArgs{TenantID: tid("B"), N: 1}, fairArgs{TenantID: tid("B"), N: 2})

	got := decoded(t, s.fetch(t, nil, riverdriver.JobGetAvailableParams{MaxToLock: 10, Kind: []string{"FAIR_OTHER"}}))
	require.Equal(t, []string{"A2", "B1"}, names(got))

	// An empty, non-nil list allows no kind (River's semantics).
	res := s.fetch(t, nil, riverdriver.JobGetAvailableParams{MaxToLock: 10, Kind: []string{}})
	require.Empty(t, res.Jobs)
	require.Equal(t, 2, s.countState(t, rivertype.JobStateAvailable))
}

// A job scheduled in the future is not due, and does not hold its tenant's
// place: the tenant's due jobs go.
func TestFutureJobsExcluded(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	s.insert(t, &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)}, jobsOf("A", 1, 2)...)
	s.insert(t, nil, jobsOf("B", 1, 1)...)
	// River inserts a job scheduled in the future as scheduled; River's
	// scheduler makes it available when due. One made available early
	// (as a snooze or a clock ahead would leave it) is still not due.
	_, err := s.pool.Exec(context.Background(), `UPDATE river_job SET state = 'available' WHERE args->>'tenant_id' = $1`, tid("A"))
	require.NoError(t, err)
	s.insert(t, nil, jobsOf("A", 3, 3)...)

	got := decoded(t, s.fetch(t, nil, riverdriver.JobGetAvailableParams{MaxToLock: 10}))
	require.ElementsMatch(t, []string{"B1", "A3"}, names(got))

	// River's clock, when it has one, is the one that decides.
	later := time.Now().Add(2 * time.Hour)
	got = decoded(t, s.fetch(t, nil, riverdriver.JobGetAvailableParams{MaxToLock: 10, Now: &later}))
	require.Equal(t, []string{"A1", "A2"}, names(got))
}

// The returned rows are River's rows as River's driver returns them: moved
// to running, attempt + 1, attempted_at and attempted_by set, attempted_by
// trimmed, errors decoded as leniently as River decodes them.
func TestReturnedRows(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	s.insert(t, nil, jobsOf("A", 1, 3)...)
	ctx := context.Background()
	errJSON := `{"at":"2026-01-02T03:04:05Z","attempt":1,"error":"boom","trace":""}`
	_, err := s.pool.Exec(ctx, `UPDATE river_job SET attempt = 1, attempted_by = ARRAY['w1','w2','w3'],
		errors = ARRAY[$1::jsonb] WHERE args->>'n' = '1'`, errJSON)
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, `UPDATE river_job SET errors = ARRAY['{"at": "not a time"}'::jsonb] WHERE args->>'n' = '2'`)
	require.NoError(t, err)

	// A unique job, whose unique states River keeps as a bitmask.
	_, err = s.client.Insert(ctx, fairArgs{TenantID: tid("B"), N: 9},
		&river.InsertOpts{Queue: queue, Priority: 3, UniqueOpts: river.UniqueOpts{ByArgs: true}})
	require.NoError(t, err)

	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	res := s.fetch(t, nil, riverdriver.JobGetAvailableParams{MaxToLock: 10, ClientID: "me", MaxAttemptedBy: 3, Now: &now})
	require.Len(t, res.Jobs, 4)
	// Each row is the row River's own driver reads back, field for field.
	exec := riverpgxv5.New(s.pool).GetExecutor()
	for _, row := range res.Jobs {
		stored, err := exec.JobGetByID(ctx, &riverdriver.JobGetByIDParams{ID: row.ID})
		require.NoError(t, err)
		require.Equal(t, stored, row)
	}
	require.NotEmpty(t, res.Jobs[1].UniqueStates, "the unique job (B's first) kept its unique states")
	require.Equal(t, "B9", decoded(t, res)[1].String())
	first := res.Jobs[0]
	require.Equal(t, rivertype.JobStateRunning, first.State)
	require.Equal(t, 2, first.Attempt)
	require.Equal(t, now, *first.AttemptedAt)
	require.Equal(t, []string{"w2", "w3", "me"}, first.AttemptedBy, "trimmed to MaxAttemptedBy")
	require.Len(t, first.Errors, 1)
	require.Equal(t, "boom", first.Errors[0].Error)
	require.Equal(t, "FAIR_TEST", first.Kind)
	require.Equal(t, queue, first.Queue)
	require.Equal(t, 2, first.Priority)
	require.Equal(t, time.UTC, first.CreatedAt.Location())

	third := res.Jobs[3]
	require.Equal(t, 1, third.Attempt)
	require.Equal(t, []string{"me"}, third.AttemptedBy)

	// River reads an error it did not write as best it can: a bad time
	// is left zero, the job is still worked.
	require.Empty(t, res.DecodeErrors)
	require.Len(t, res.Jobs[2].Errors, 1)
	require.True(t, res.Jobs[2].Errors[0].At.IsZero())
	require.Equal(t, 0, s.countState(t, rivertype.JobStateAvailable))

	// The database agrees with what was returned.
	var attempt int
	var by []string
	require.NoError(t, s.pool.QueryRow(ctx, `SELECT attempt, attempted_by FROM river_job WHERE id = $1`, first.ID).Scan(&attempt, &by))
	require.Equal(t, 2, attempt)
	require.Equal(t, []string{"w2", "w3", "me"}, by)
}

// A tenant at its cap gets nothing more in that queue until one of its
// jobs ends; the other tenants are unaffected, and other queues are not
// capped.
func TestTenantCap(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	s.insert(t, nil, jobsOf("A", 1, 10)...)
	s.insert(t, nil, jobsOf("B", 1, 1)...)
	caps := map[string]int{queue: 3}

	got := decoded(t, s.fetch(t, caps, riverdriver.JobGetAvailableParams{MaxToLock: 10}))
	require.Equal(t, []string{"A1", "B1", "A2", "A3"}, names(got))
	require.Empty(t, s.fetch(t, caps, riverdriver.JobGetAvailableParams{MaxToLock: 10}).Jobs, "A is at its cap")

	_, err := s.pool.Exec(context.Background(), `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE args->>'n' = '1' AND args->>'tenant_id' = $1`, tid("A"))
	require.NoError(t, err)
	got = decoded(t, s.fetch(t, caps, riverdriver.JobGetAvailableParams{MaxToLock: 10}))
	require.Equal(t, []string{"A4"}, names(got), "one ended, one more")

	// The cap is the queue's: uncapped, the rest of A's backlog goes.
	got = decoded(t, s.fetch(t, map[string]int{"other": 3}, riverdriver.JobGetAvailableParams{MaxToLock: 10}))
	require.Len(t, got, 6)
}

// capWorker counts the running jobs of each tenant, across clients, and
// records the most it saw at once.
type capWorker struct {
	river.WorkerDefaults[fairArgs]
	mu      sync.Mutex
	running map[string]int
	most    map[string]int
	done    chan string
}

func (w *capWorker) Work(ctx context.Context, j *river.Job[fairArgs]) error {
	w.mu.Lock()
	tenant := tenantName(j.Args.TenantID)
	w.running[tenant]++
	w.most[tenant] = max(w.most[tenant], w.running[tenant])
	w.mu.Unlock()
	// Long enough that the other client fetches while this job runs.
	select {
	case <-time.After(30 * time.Millisecond):
	case <-ctx.Done():
	}
	w.mu.Lock()
	w.running[tenant]--
	w.mu.Unlock()
	w.done <- tenant
	return nil
}

// Two clients, as two processes of the fleet would be, each with room for
// ten jobs: one tenant never has more than the cap running at once between
// them, and the other tenant's jobs run beside it.
func TestTenantCapAcrossClients(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	const capN, total = 3, 60
	s.insert(t, nil, jobsOf("A", 1, total)...)
	s.insert(t, nil, jobsOf("B", 1, 5)...)

	w := &capWorker{running: map[string]int{}, most: map[string]int{}, done: make(chan string, total+10)}
	for i := range 2 {
		workers := river.NewWorkers()
		river.AddWorker(workers, w)
		client, err := river.NewClient(fairfetch.Wrap(riverpgxv5.New(s.pool), s.pool, map[string]int{queue: capN}), &river.Config{
			ID:                fmt.Sprintf("client-%d", i),
			FetchCooldown:     5 * time.Millisecond,
			FetchPollInterval: 10 * time.Millisecond,
			Queues:            map[string]river.QueueConfig{queue: {MaxWorkers: 10}},
			Workers:           workers,
		})
		require.NoError(t, err)
		require.NoError(t, client.Start(t.Context()))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = client.Stop(ctx)
		})
	}
	timeout := time.After(60 * time.Second) // did-not-hang bound
	for range total + 5 {
		select {
		case <-w.done:
		case <-timeout:
			t.Fatal("the jobs did not all finish within 60 s")
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	require.Equal(t, capN, w.most["A"], "A ran up to its cap, never past it")
	require.LessOrEqual(t, w.most["B"], capN)
}

var _ riverpilot.Pilot = (*fairfetch.Pilot)(nil)
