//go:build chaos

package e2e

// Chaos tests: real `bpc serve --role=worker` processes
// killed with SIGKILL, stopped with SIGTERM under load, and a Postgres
// restarted under them. The execution log is (a) the committed effects,
// counted per work item, and (b) the workers' "job transition" lines.
//
//	make chaos
//	go test -tags chaos -race=false -count=1 -run Chaos -v ./internal/e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// snapshots creates n BUILDING snapshots and returns their BUILD_SNAPSHOT args.
func (e *chaosEnv) snapshots(n int) []jobargs.Args {
	e.t.Helper()
	out := make([]jobargs.Args, 0, n)
	require.NoError(e.t, e.st.InTx(e.ctx, func(tx pgx.Tx) error {
		for range n {
			sn, err := e.st.WithTx(tx).CreateSnapshot(e.ctx, store.DevTenantID)
			if err != nil {
				return err
			}
			out = append(out, jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: store.DevTenantID}, SnapshotID: sn.SnapshotID})
		}
		return nil
	}))
	return out
}

// ruleTests creates n versions of the sample rule package, spread over a
// few packages, and returns one RUN_RULE_TESTS per version, seeds varying.
func (e *chaosEnv) ruleTests(n int) []jobargs.Args {
	e.t.Helper()
	const packages = 5
	out := make([]jobargs.Args, 0, n)
	require.NoError(e.t, e.st.InTx(e.ctx, func(tx pgx.Tx) error {
		pkgs := make([]bpctype.RulePackage, packages)
		for i := range pkgs {
			var err error
			if pkgs[i], err = e.st.WithTx(tx).CreateRulePackage(e.ctx, store.DevTenantID, "chaos-"+uuid.NewString()[:8]); err != nil {
				return err
			}
		}
		for i := range n {
			v, err := e.st.WithTx(tx).CreateRulePackageVersion(e.ctx, store.DevTenantID, pkgs[i%packages].RulePackageID, nmc811.Rules(), nmc811.Tests())
			if err != nil {
				return err
			}
			out = append(out, jobargs.RunRuleTestsArgs{Base: jobargs.Base{TenantID: store.DevTenantID},
				RulePackageVersionID: v.RulePackageVersionID, Seed: int64(1000 + i)})
		}
		return nil
	}))
	return out
}

// requireSnapshotsReadyOnce asserts every snapshot is READY with exactly one
// snapshot.ready event.
func (e *chaosEnv) requireSnapshotsReadyOnce(want int) {
	e.t.Helper()
	var total, ready, bad int
	require.NoError(e.t, e.pool.QueryRow(e.ctx, `
		SELECT count(*),
		       count(*) FILTER (WHERE s.status = 'READY'),
		       count(*) FILTER (WHERE (SELECT count(*) FROM events ev
		           WHERE ev.tenant_id = s.tenant_id AND ev.aggregate_type = $1
		             AND ev.aggregate_id = s.snapshot_id AND ev.event_type = $2) <> 1)
		FROM data_snapshots s`, passport.AggregateSnapshot, passport.EventSnapshotReady).Scan(&total, &ready, &bad))
	require.Equal(e.t, want, total, "snapshots")
	require.Equal(e.t, want, ready, "READY snapshots")
	require.Zero(e.t, bad, "snapshots without exactly one %s event", passport.EventSnapshotReady)
}

// requireTestsRunOnce asserts every rule package version has exactly one
// tests run, made by the version's job, and one rules.tests_run event.
func (e *chaosEnv) requireTestsRunOnce(want int) {
	e.t.Helper()
	var total, badRuns, badEvents, badJob int
	require.NoError(e.t, e.pool.QueryRow(e.ctx, `
		WITH v AS (
		  SELECT v.rule_package_version_id AS id, v.tenant_id,
		    (SELECT count(*) FROM rule_tests_runs r WHERE r.rule_package_version_id = v.rule_package_version_id) AS runs,
		    (SELECT count(*) FROM events ev WHERE ev.tenant_id = v.tenant_id AND ev.aggregate_type = $1
		       AND ev.aggregate_id = v.rule_package_version_id AND ev.event_type = $2) AS events,
		    (SELECT count(*) FROM rule_tests_runs r JOIN jobs j ON j.river_job_id = r.river_job_id
		       WHERE r.rule_package_version_id = v.rule_package_version_id
		         AND j.payload->>'rule_package_version_id' = v.rule_package_version_id::text) AS by_job
		  FROM rule_package_versions v)
		SELECT count(*), count(*) FILTER (WHERE runs <> 1), count(*) FILTER (WHERE events <> 1),
		       count(*) FILTER (WHERE by_job <> 1)
		FROM v`, passport.AggregateRulePackageVersion, passport.EventTestsRun).Scan(&total, &badRuns, &badEvents, &badJob))
	require.Equal(e.t, want, total, "rule package versions")
	require.Zero(e.t, badRuns, "versions without exactly one tests run")
	require.Zero(e.t, badEvents, "versions without exactly one %s event", passport.EventTestsRun)
	require.Zero(e.t, badJob, "versions whose run was not recorded by their own job")
}

// runningByOwner counts the SSOT jobs RUNNING per lease owner.
func (e *chaosEnv) runningByOwner() map[string][]int64 {
	e.t.Helper()
	rows, err := e.pool.Query(e.ctx, `SELECT coalesce(lease_owner, ''), river_job_id FROM jobs WHERE status = 'RUNNING'`)
	require.NoError(e.t, err)
	out := map[string][]int64{}
	for rows.Next() {
		var owner string
		var id int64
		require.NoError(e.t, rows.Scan(&owner, &id))
		out[owner] = append(out[owner], id)
	}
	require.NoError(e.t, rows.Err())
	return out
}

// busiest waits until some process has at least n jobs RUNNING and returns it.
func (e *chaosEnv) busiest(procs []*chaosProc, n int, timeout time.Duration) *chaosProc {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		running := e.runningByOwner()
		var best *chaosProc
		for _, p := range procs {
			if len(running[p.id]) >= n && (best == nil || len(running[p.id]) > len(running[best.id])) {
				best = p
			}
		}
		if best != nil {
			return best
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("no worker had %d jobs RUNNING within %s (statuses %v)", n, timeout, e.statusCounts())
	return nil
}

func (e *chaosEnv) leader() string {
	var id string
	_ = e.pool.QueryRow(e.ctx, `SELECT leader_id FROM river_leader LIMIT 1`).Scan(&id)
	return id
}

// TestChaosTenWorkersExactlyOnce is SC-001: ten worker processes work 1,000
// BUILD_SNAPSHOT jobs; every effect is committed exactly once and no attempt
// runs in two processes.
func TestChaosTenWorkersExactlyOnce(t *testing.T) {
	const workersN, jobs = 10, 1000
	_, schemaURL := testdb.EmptySchema(t)
	e := newChaosEnvAt(t, schemaURL, 6) // 60 connections in all
	e.extra["BPC_WORKER_CONCURRENCY"] = "4"
	procs := e.startWorkers(workersN)
	args := e.snapshots(jobs)
	start := time.Now()
	e.enqueue(args)
	e.waitAllSucceeded(jobs, 2*time.Minute)
	elapsed := time.Since(start)

	sum := e.summarize()
	busy := 0
	for _, p := range procs {
		if sum.byProc[p.id] > 0 {
			busy++
		}
	}
	t.Logf("%d jobs over %d processes in %s (%.0f jobs/s); per process %v; transition lines %v",
		jobs, workersN, elapsed.Round(time.Millisecond), float64(jobs)/elapsed.Seconds(), sum.byProc, sum.statuses)
	e.requireSnapshotsReadyOnce(jobs)
	sum.requireExactlyOnce(t, jobs, true)
	require.GreaterOrEqual(t, busy, 2, "work spread over processes")
	e.requireSettled(jobs)
}

// TestChaosKillDashNine kills a worker process with SIGKILL while it runs
// jobs: the jobs come back once their lease expires, run elsewhere, and
// every effect is committed exactly once.
func TestChaosKillDashNine(t *testing.T) {
	const workersN, jobs = 3, 200
	e := newChaosEnv(t)
	procs := e.startWorkers(workersN)
	e.enqueue(e.ruleTests(jobs))

	victim := e.busiest(procs, 3, 60*time.Second)
	leader := e.leader()
	var killAt, leaseUntil time.Time
	killed := e.runningByOwner()[victim.id]
	require.NoError(t, e.pool.QueryRow(e.ctx, `SELECT clock_timestamp(), coalesce(max(lease_expires_at), clock_timestamp())
		FROM jobs WHERE river_job_id = ANY($1)`, killed).Scan(&killAt, &leaseUntil))
	victim.signal(t, syscall.SIGKILL)
	select {
	case <-victim.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not die of SIGKILL", victim.id)
	}
	t.Logf("killed %s (leader: %v) with %d jobs RUNNING: %v; their leases ran until %s after the kill",
		victim.id, leader == victim.id, len(killed), killed, leaseUntil.Sub(killAt).Round(time.Millisecond))

	// Watch the killed jobs until each has left the dead worker.
	bound := time.Duration(chaosLeaseSeconds)*time.Second + chaosReaperInterval + 2*time.Second
	lastErr := map[int64]string{}
	released := map[int64]time.Duration{}
	deadline := time.Now().Add(bound + 20*time.Second)
	for len(lastErr) < len(killed) && time.Now().Before(deadline) {
		rows, err := e.pool.Query(e.ctx, `SELECT river_job_id, status, coalesce(lease_owner, ''), coalesce(last_error->>'code', '')
			FROM jobs WHERE river_job_id = ANY($1)`, killed)
		require.NoError(t, err)
		for rows.Next() {
			var id int64
			var status, owner, code string
			require.NoError(t, rows.Scan(&id, &status, &owner, &code))
			if _, seen := lastErr[id]; !seen && !(status == bpctype.StatusRunning && owner == victim.id) {
				lastErr[id] = status + " " + code
				released[id] = time.Since(killAt)
			}
		}
		require.NoError(t, rows.Err())
		time.Sleep(20 * time.Millisecond)
	}
	if len(lastErr) < len(killed) {
		var stuck []int64
		for _, id := range killed {
			if _, ok := lastErr[id]; !ok {
				stuck = append(stuck, id)
			}
		}
		t.Fatalf("%d job(s) still RUNNING on the killed %s %s after the kill (lease %ds, reaper %s): %v",
			len(stuck), victim.id, time.Since(killAt).Round(time.Millisecond), chaosLeaseSeconds, chaosReaperInterval, stuck)
	}

	e.waitAllSucceeded(jobs, 90*time.Second)

	// Recovery: from the kill to the next attempt's start on another worker.
	rows, err := e.pool.Query(e.ctx, `SELECT id, attempt, attempted_at, attempted_by[array_upper(attempted_by, 1)],
		coalesce((SELECT max(x->>'error') FROM jsonb_array_elements(to_jsonb(errors)) x), '')
		FROM river_job WHERE id = ANY($1)`, killed)
	require.NoError(t, err)
	var recovery, rel []time.Duration
	finishedBeforeKill, codes := 0, map[string]int{}
	for rows.Next() {
		var id int64
		var attempt int
		var at time.Time
		var by, errs string
		require.NoError(t, rows.Scan(&id, &attempt, &at, &by, &errs))
		if by == victim.id {
			finishedBeforeKill++ // its completion committed between the snapshot and the kill
			continue
		}
		recovery = append(recovery, at.Sub(killAt))
		rel = append(rel, released[id])
		code := strings.Fields(lastErr[id] + " -")[1]
		codes[code]++
		t.Logf("river job %d: released (seen) %s and attempt %d started on %s %s after the kill; at release: %s; River errors: %.160s",
			id, released[id].Round(time.Millisecond), attempt, by, at.Sub(killAt).Round(time.Millisecond), lastErr[id], errs)
	}
	require.NoError(t, rows.Err())
	med, maxd := medianMax(recovery)
	relMed, relMax := medianMax(rel)
	t.Logf("killed jobs back in the queue (seen by a 20 ms poll): median %s, max %s after the kill", relMed.Round(time.Millisecond), relMax.Round(time.Millisecond))
	t.Logf("recovery of %d killed job(s) (%d finished before the kill), kill → RUNNING again elsewhere: median %s, max %s (bound %s); last_error codes at release %v",
		len(recovery), finishedBeforeKill, med.Round(time.Millisecond), maxd.Round(time.Millisecond), bound, codes)
	require.NotEmpty(t, recovery, "no job was interrupted by the kill")
	require.Less(t, relMax, bound, "killed jobs must be back in the queue within lease TTL + reaper interval + 2 s")
	require.Less(t, maxd, bound, "killed jobs must run again within lease TTL + reaper interval + 2 s "+
		"(back in the queue after %s at most: the rest is time spent queued behind the backlog)", relMax.Round(time.Millisecond))
	for code := range codes {
		if code != "-" {
			require.Equal(t, "LEASE_EXPIRED", code, "last_error of a job released from the killed worker")
		}
	}
	if codes["-"] > 0 {
		t.Logf("%d released job(s) had no last_error code when observed", codes["-"])
	}

	e.requireTestsRunOnce(jobs)
	sum := e.summarize()
	sum.requireExactlyOnce(t, jobs, false)
	t.Logf("transition lines %v", sum.statuses)
	e.requireSettled(jobs)
}

// TestChaosPostgresRestart restarts Postgres (`pg_ctl restart -m fast`)
// under two loaded worker processes: they report not ready while it is
// down, reconnect by themselves, and every job succeeds.
func TestChaosPostgresRestart(t *testing.T) {
	cluster := newPGCluster(t)
	e := newChaosEnvAt(t, cluster.url("postgres"), 10)
	procs := e.startWorkers(2)
	for _, p := range procs {
		require.Equal(t, http.StatusOK, p.ready(http.DefaultClient), "%s ready before the restart", p.id)
	}
	const snapshots, ruleTests = 600, 60
	args := append(e.snapshots(snapshots), e.ruleTests(ruleTests)...)
	jobs := len(args)

	// Readiness of each process, sampled every 20 ms, as a run-length list.
	var mu sync.Mutex
	seen := map[string][]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second}
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				code := p.ready(client)
				mu.Lock()
				if s := seen[p.id]; len(s) == 0 || s[len(s)-1] != code {
					seen[p.id] = append(s, code)
				}
				mu.Unlock()
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
	}
	stopPolling := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopPolling)

	e.enqueue(args)
	deadline := time.Now().Add(60 * time.Second)
	for e.statusCounts()[bpctype.StatusSucceeded] < jobs/4 {
		require.True(t, time.Now().Before(deadline), "no progress before the restart: %v", e.statusCounts())
		time.Sleep(20 * time.Millisecond)
	}
	before := e.statusCounts()
	e.pool.Reset() // the test's own connections die with the server too
	t0 := time.Now()
	cluster.restart()
	t.Logf("pg_ctl restart -m fast took %s; jobs before: %v", time.Since(t0).Round(time.Millisecond), before)

	// Each process comes back by itself.
	for _, p := range procs {
		require.Eventually(t, func() bool { return p.ready(client) == http.StatusOK }, 60*time.Second, 50*time.Millisecond,
			"%s ready again after the restart", p.id)
	}
	e.waitAllSucceeded(jobs, 2*time.Minute)
	stopPolling()
	for _, p := range procs {
		s := seen[p.id]
		t.Logf("%s readiness over the run: %v", p.id, s)
		i503 := indexOf(s, http.StatusServiceUnavailable)
		require.GreaterOrEqual(t, i503, 0, "%s never reported 503 while Postgres was down: %v", p.id, s)
		require.Equal(t, http.StatusOK, s[len(s)-1], "%s readiness after the restart: %v", p.id, s)
		require.False(t, p.exited(), "%s exited", p.id)
	}

	e.requireSnapshotsReadyOnce(snapshots)
	e.requireTestsRunOnce(ruleTests)
	sum := e.summarize()
	// false: a commit whose reply the restart cut leaves the job SUCCEEDED
	// with a QUEUED/DB_UNAVAILABLE line.
	sum.requireExactlyOnce(t, jobs, false)
	if n := jobs - len(sum.succeeded); n > 0 {
		t.Logf("%d job(s) SUCCEEDED without a SUCCEEDED line (commit reply lost in the restart)", n)
	}
	t.Logf("transition lines %v", sum.statuses)
	e.requireSettled(jobs)
}

func indexOf(s []int, v int) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestChaosSIGTERMUnderLoad stops one of two loaded workers with SIGTERM:
// it exits 0 (its shutdown timeout cutting the drain short), leaves no job
// RUNNING in its name, and the other worker finishes the rest.
func TestChaosSIGTERMUnderLoad(t *testing.T) {
	// The victim is signalled as soon as it runs 3 jobs, well under a second
	// after the enqueue; 100 jobs leave the other worker a backlog of some
	// 90 to finish alone. 300 only made that tail three times as long.
	const jobs = 100
	e := newChaosEnv(t)
	// Jobs well within the shutdown timeout on a small machine.
	e.extra["BPC_WORKER_CONCURRENCY"] = "3"
	procs := e.startWorkers(2)
	e.enqueue(e.ruleTests(jobs))

	victim := e.busiest(procs, 3, 60*time.Second)
	running := len(e.runningByOwner()[victim.id])
	t0 := time.Now()
	victim.signal(t, syscall.SIGTERM)
	// A wait, not a speed claim: ten times the shutdown timeout, which the
	// process enforces itself.
	limit := 10 * chaosShutdownTimeout
	select {
	case <-victim.done:
	case <-time.After(limit):
		t.Fatalf("%s still running %s after SIGTERM (shutdown timeout %s)", victim.id, limit, chaosShutdownTimeout)
	}
	took := victim.exitedAt.Sub(t0)
	t.Logf("%s exited %s after SIGTERM with %d jobs RUNNING at the signal: %s", victim.id, took.Round(time.Millisecond), running, victim.state)
	require.Equal(t, 0, victim.state.ExitCode(), "exit status of %s: %s", victim.id, victim.state)

	left := e.runningByOwner()[victim.id]
	require.Empty(t, left, "jobs still RUNNING with the stopped worker's lease")

	e.waitAllSucceeded(jobs, 90*time.Second)
	e.requireTestsRunOnce(jobs)
	sum := e.summarize()
	// A graceful stop lets running jobs finish within the shutdown timeout
	// and requeues only those still running past it: a job of the stopped
	// worker that ended without success before the timeout was cut short.
	var early, late []string
	var longest time.Duration
	for id, rs := range sum.runs {
		for _, r := range rs {
			if r.outcome == bpctype.StatusSucceeded {
				longest = max(longest, r.end.Sub(r.start))
			}
			if r.proc != victim.id || r.outcome == bpctype.StatusSucceeded {
				continue
			}
			desc := fmt.Sprintf("river job %d ended %s after the signal (%s %s)", id, r.end.Sub(t0).Round(time.Millisecond), r.outcome, r.code)
			if r.end.Before(t0.Add(chaosShutdownTimeout - 100*time.Millisecond)) {
				early = append(early, desc)
			} else {
				late = append(late, desc)
			}
		}
	}
	sort.Strings(early)
	sort.Strings(late)
	t.Logf("per process SUCCEEDED %v; longest job %s; requeued by the shutdown past its timeout: %v; transition lines %v",
		sum.byProc, longest.Round(time.Millisecond), late, sum.statuses)
	require.Empty(t, early, "jobs of %s interrupted before the shutdown timeout (%s): running jobs must be let finish within BPC_WORKER_SHUTDOWN_TIMEOUT_MS",
		victim.id, chaosShutdownTimeout)
	sum.requireExactlyOnce(t, jobs, true)
	e.requireSettled(jobs)
}

// TestChaosPoisonJobIsDiscarded: a job that takes down whichever worker
// process runs it (here: a DELIVER_WEBHOOK to an endpoint that never
// answers, and the test kills with SIGKILL every worker that picks it up) is
// reaped once and tried on another worker, and discarded at its second loss
// (BPC_JOBS_MAX_LEASE_EXPIRIES=2): DEAD_LETTER with LEASE_EXPIRED "worker
// lost 2 times", instead of hopping through the fleet until its five
// attempts are spent. The third worker never runs it and stays up, working
// other jobs, and so does the API process.
func TestChaosPoisonJobIsDiscarded(t *testing.T) {
	const others = 20
	e := newChaosEnv(t)
	// The POST outlives the test: only a lost lease ends an attempt.
	e.extra["BPC_WEBHOOK_TIMEOUT_MS"] = "120000"
	procs := e.startWorkers(3)
	apiProc := e.startProc("api")
	e.waitListening(apiProc)

	var mu sync.Mutex
	var posts []time.Time
	hang := make(chan struct{})
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		posts = append(posts, time.Now())
		mu.Unlock()
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(recv.Close)
	t.Cleanup(func() { close(hang) })
	postCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(posts)
	}

	var delivery bpctype.DeliveryRef
	require.NoError(t, e.st.InTx(e.ctx, func(tx pgx.Tx) error {
		ep, err := e.st.WithTx(tx).CreateWebhookEndpoint(e.ctx, store.DevTenantID, recv.URL, testSecret)
		if err != nil {
			return err
		}
		res, err := passport.NewTx(tx, e.ins, "").AppendEvent(e.ctx, passport.EventInput{TenantID: store.DevTenantID,
			AggregateType: "Passport", AggregateID: uuid.New(), EventType: "chaos.poison",
			Payload: []byte(`{}`), DeliverTo: &ep.WebhookEndpointID})
		if err != nil {
			return err
		}
		delivery = res.Deliveries[0]
		return nil
	}))
	job, err := e.st.GetJob(e.ctx, store.DevTenantID, delivery.JobID)
	require.NoError(t, err)

	// Kill every worker that runs it, as a crashing handler would.
	byID := map[string]*chaosProc{}
	for _, p := range procs {
		byID[p.id] = p
	}
	var killed []string
	var final bpctype.Job
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		final, err = e.st.GetJob(e.ctx, store.DevTenantID, job.JobID)
		require.NoError(t, err)
		if bpctype.IsTerminal(final.Status) {
			break
		}
		if final.Status == bpctype.StatusRunning && final.LeaseOwner != nil && postCount() > len(killed) {
			victim := byID[*final.LeaseOwner]
			require.NotNil(t, victim, "lease owner %q", *final.LeaseOwner)
			if !victim.exited() {
				victim.signal(t, syscall.SIGKILL)
				<-victim.done
				killed = append(killed, victim.id)
				t.Logf("attempt %d: killed %s, which was running it", final.Attempts, victim.id)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, bpctype.StatusDeadLetter, final.Status, "after %d kills", len(killed))
	lostAt := time.Now()
	require.Len(t, killed, 2, "two workers lost, then discarded")
	require.EqualValues(t, 2, final.Attempts)
	require.Less(t, final.Attempts, final.MaxAttempts, "discarded for its losses, with attempts to spare")
	require.Equal(t, 2, postCount(), "the third worker never ran it")
	last := lastError(t, final)
	require.Equal(t, "LEASE_EXPIRED", last.Code)
	require.Equal(t, 2, last.Attempt)
	require.True(t, strings.HasPrefix(last.Message, "worker lost 2 times in a row"), last.Message)
	require.Contains(t, last.Message, killed[1])
	t.Logf("DEAD_LETTER after %d losses; last_error %s", len(killed), final.LastError)

	// The survivors: the third worker and the API answer, and work goes on.
	var survivor *chaosProc
	for _, p := range procs {
		if !p.exited() {
			survivor = p
		}
	}
	require.NotNil(t, survivor)
	client := &http.Client{Timeout: 5 * time.Second}
	require.Equal(t, http.StatusOK, survivor.ready(client), "the surviving worker")
	require.Equal(t, http.StatusOK, apiProc.ready(client), "the API process")
	req, err := http.NewRequest(http.MethodGet, "http://"+survivor.addr+"/v1/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := client.Do(req)
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(metrics), `bpc_jobs_dead_letter_total{type="DELIVER_WEBHOOK"} 1`,
		"counted by the reaper that discarded it")

	e.enqueue(e.snapshots(others))
	e.waitAllSucceeded(others, 60*time.Second)
	e.requireSnapshotsReadyOnce(others)
	require.Equal(t, http.StatusOK, survivor.ready(client))
	require.Equal(t, http.StatusOK, apiProc.ready(client))
	require.Equal(t, 2, postCount(), "still not run again")
	t.Logf("%d other jobs succeeded on %s within %s of the discard", others, survivor.id, time.Since(lostAt).Round(time.Millisecond))

	require.Equal(t, map[string]int{bpctype.StatusSucceeded: others, bpctype.StatusDeadLetter: 1}, e.statusCounts())
	rep, err := e.st.CheckConsistency(e.ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "mirror drift: %+v", rep.Drifts)
}
