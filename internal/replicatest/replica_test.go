package replicatest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/cli"
	"github.com/bpc-platform/bpc/internal/doctor"
	"github.com/bpc-platform/bpc/internal/fixture"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/testlog"
	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/migrations"
	"github.com/bpc-platform/bpc/store"
)

const adminToken = "replica-test-admin-token-0123456789"

// pair is the primary and replica scripts/replica.sh started.
type pair struct {
	primaryURL, replicaURL, ctl string
}

var migrateOnce sync.Once

// thePair returns the pair from the environment, with the primary up, the
// replica up and replaying, and the schema migrated; without the
// environment the test fails, saying how to get one.
func thePair(t *testing.T) pair {
	t.Helper()
	p := pair{os.Getenv("TEST_REPLICA_PRIMARY_URL"), os.Getenv("TEST_REPLICA_URL"), os.Getenv("TEST_REPLICA_CTL")}
	if p.primaryURL == "" || p.replicaURL == "" || p.ctl == "" {
		t.Fatal("TEST_REPLICA_PRIMARY_URL, TEST_REPLICA_URL and TEST_REPLICA_CTL are not set: these tests need a real " +
			"streaming replica; run them via scripts/test.sh, or scripts/replica.sh run go test ./internal/replicatest/")
	}
	// A test that failed half-way may have left a server stopped or replay
	// paused: each test starts from a streaming pair.
	p.ensure(t, "primary")
	p.ensure(t, "replica")
	p.replicaExec(t, "SELECT pg_wal_replay_resume()")
	migrateOnce.Do(func() {
		pool := p.pool(t, p.primaryURL)
		require.NoError(t, migrations.Up(t.Context(), pool, slog.New(slog.DiscardHandler)))
	})
	return p
}

// pool returns a pool on url, closed when the test ends.
func (p pair) pool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// ctlRun runs `replica.sh ctl node action`.
func (p pair) ctlRun(t *testing.T, node, action string) error {
	t.Helper()
	out, err := exec.Command("bash", p.ctl, "ctl", node, action).CombinedOutput()
	if err != nil {
		return fmt.Errorf("replica.sh ctl %s %s: %w\n%s", node, action, err, out)
	}
	return nil
}

// stop stops node (primary or replica), and starts it again when the test
// ends.
func (p pair) stop(t *testing.T, node string) {
	t.Helper()
	require.NoError(t, p.ctlRun(t, node, "stop"))
	t.Cleanup(func() { p.ensure(t, node) })
}

// start starts node.
func (p pair) start(t *testing.T, node string) {
	t.Helper()
	require.NoError(t, p.ctlRun(t, node, "start"))
}

// ensure starts node unless it answers.
func (p pair) ensure(t *testing.T, node string) {
	t.Helper()
	url := p.primaryURL
	if node == "replica" {
		url = p.replicaURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if pool, err := pgxpool.New(ctx, url); err == nil {
		defer pool.Close()
		if pool.Ping(ctx) == nil {
			return
		}
	}
	require.NoError(t, p.ctlRun(t, node, "start"))
}

// replicaExec runs sql on the replica (pg_wal_replay_pause and _resume).
// Not the test's context: cleanups call it after that one has ended.
func (p pair) replicaExec(t *testing.T, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, p.replicaURL)
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(ctx, sql)
	require.NoError(t, err)
}

// pauseReplay makes the replica lag: it keeps receiving WAL and replays
// none until the test ends (or resumeReplay). pg_wal_replay_pause only
// asks: it returns once replay has stopped.
func (p pair) pauseReplay(t *testing.T) {
	t.Helper()
	p.replicaExec(t, "SELECT pg_wal_replay_pause()")
	t.Cleanup(func() { p.resumeReplay(t) })
	replica := p.pool(t, p.replicaURL)
	waitFor(t, "the replica's replay to pause", func() bool {
		var state string
		err := replica.QueryRow(t.Context(), `SELECT pg_get_wal_replay_pause_state()`).Scan(&state)
		return err == nil && state == "paused"
	})
}

func (p pair) resumeReplay(t *testing.T) {
	t.Helper()
	p.replicaExec(t, "SELECT pg_wal_replay_resume()")
}

// waitFor polls cond until it holds, failing after a generous bound (a
// did-not-hang bound, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting (60 s) for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRoute waits until the router sends reads to target for reason.
func waitRoute(t *testing.T, r *store.ReadRouter, target, reason string) {
	t.Helper()
	waitFor(t, "reads routed to "+target+" ("+reason+")", func() bool {
		tg, rs := r.Route()
		return tg == target && rs == reason
	})
}

// svc is the API role of the service over the pair, with the replica
// as BPC_DATABASE_READ_URL.
type svc struct {
	app    *service.App
	router *store.ReadRouter
	base   string
	pool   *pgxpool.Pool  // the primary's
	st     *store.Queries // over pool
}

func startService(t *testing.T, p pair, env map[string]string) svc {
	t.Helper()
	all := map[string]string{
		"DATABASE_URL":                        p.primaryURL,
		"BPC_DATABASE_READ_URL":               p.replicaURL,
		"BPC_DATABASE_READ_CHECK_INTERVAL_MS": "50",
		"BPC_ENV":                             "test",
		"BPC_ADMIN_TOKEN":                     adminToken,
		"BPC_HTTP_ADDR":                       "127.0.0.1:0",
		"BPC_WORKER_ID":                       "replica-test-" + uuid.NewString()[:8],
		"BPC_RATE_LIMIT_RPS":                  "0",
	}
	for k, v := range env {
		all[k] = v
	}
	cfg, err := service.LoadConfig(func(k string) string { return all[k] })
	require.NoError(t, err)
	pool := p.pool(t, p.primaryURL)
	logs := &testlog.Buffer{}
	a, err := service.New(cfg, service.RoleAPI, service.NewLogger(cfg, logs), pool)
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service log:\n%s", logs.String())
		}
	})
	require.NoError(t, a.Start(t.Context()))
	t.Cleanup(func() { a.Stop(context.Background()) })
	router := a.ReadRouter()
	require.NotNil(t, router, "BPC_DATABASE_READ_URL gives the service a read router")
	return svc{app: a, router: router, base: "http://" + a.Addr(), pool: pool, st: store.New(pool)}
}

// startOnReplica starts the service over the pair, waits until its reads
// go to the replica, and returns it with a new tenant the replica has.
func startOnReplica(t *testing.T, p pair, env map[string]string) (svc, uuid.UUID) {
	t.Helper()
	s := startService(t, p, env)
	waitRoute(t, s.router, store.TargetReplica, store.ReasonReplicaHealthy)
	return s, newTenant(t, p, s.st)
}

// get requests path from the service as the platform operator, returning
// the status and body.
func (s svc) get(t *testing.T, path, accept string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.base+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// productIDs lists a tenant's battery products through the list route.
func (s svc) productIDs(t *testing.T, tenantID uuid.UUID) []uuid.UUID {
	t.Helper()
	status, body := s.get(t, "/v1/battery-products?tenant_id="+tenantID.String(), "")
	require.Equal(t, http.StatusOK, status, string(body))
	var list struct {
		Items []struct {
			ID uuid.UUID `json:"battery_product_id"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(body, &list))
	ids := make([]uuid.UUID, len(list.Items))
	for i, it := range list.Items {
		ids[i] = it.ID
	}
	return ids
}

// newTenant creates a tenant on the primary and waits for the replica to
// have it.
func newTenant(t *testing.T, p pair, st *store.Queries) uuid.UUID {
	t.Helper()
	slug := "replica-" + uuid.NewString()[:8]
	tenant, err := st.CreateTenant(t.Context(), slug, "Replica test "+slug)
	require.NoError(t, err)
	waitReplicated(t, p, "tenants", "tenant_id", tenant.TenantID)
	return tenant.TenantID
}

// waitReplicated waits until the replica has the row of table whose column
// is id.
func waitReplicated(t *testing.T, p pair, table, column string, id uuid.UUID) {
	t.Helper()
	replica := p.pool(t, p.replicaURL)
	waitFor(t, table+" "+id.String()+" on the replica", func() bool {
		var n int
		err := replica.QueryRow(t.Context(), `SELECT count(*) FROM `+table+` WHERE `+column+` = $1`, id).Scan(&n)
		return err == nil && n == 1
	})
}

// readsBy returns how many routed reads target served for reason.
func readsBy(r *store.ReadRouter, target, reason string) int64 {
	var n int64
	r.Reads(func(tg, rs string, c int64) {
		if tg == target && rs == reason {
			n = c
		}
	})
	return n
}

// The list routes read from the replica: with its replay paused, a product
// created on the primary is missing from the list (the replica's view),
// while the get by id, which stays on the primary, finds it; once replay
// resumes the list has it. The replica's pg_stat_activity shows the
// service's read connections.
func TestListReadsServedByReplica(t *testing.T) {
	p := thePair(t)
	// A lag bound far above the test's length: paused replay stays routed.
	s, tenantID := startOnReplica(t, p, map[string]string{"BPC_DATABASE_READ_MAX_LAG_MS": "3600000"})
	require.Empty(t, s.productIDs(t, tenantID))

	p.pauseReplay(t)
	product, err := s.st.CreateBatteryProduct(t.Context(), tenantID, "SKU-R1", "Written while replay is paused")
	require.NoError(t, err)
	require.Empty(t, s.productIDs(t, tenantID), "the list is the replica's, which has not replayed the product")
	status, body := s.get(t, "/v1/battery-products/"+product.BatteryProductID.String()+"?tenant_id="+tenantID.String(), "")
	require.Equal(t, http.StatusOK, status, "a get by id reads the primary: %s", body)
	require.Positive(t, readsBy(s.router, store.TargetReplica, store.ReasonReplicaHealthy))

	var readConns int
	require.NoError(t, p.pool(t, p.replicaURL).QueryRow(t.Context(),
		`SELECT count(*) FROM pg_stat_activity WHERE application_name = 'bpc-read'`).Scan(&readConns))
	require.Positive(t, readConns, "the service's read pool is connected to the replica")

	p.resumeReplay(t)
	waitFor(t, "the list to show the product once replayed", func() bool {
		ids := s.productIDs(t, tenantID)
		return len(ids) == 1 && ids[0] == product.BatteryProductID
	})

	status, metrics := s.get(t, "/v1/metrics", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(metrics), `bpc_db_reads_total{reason="replica_healthy",target="replica"}`)
	require.Contains(t, string(metrics), "bpc_db_read_replica_serving 1")
}

// A replica more than the lag bound behind sends reads to the primary,
// which has what the replica lacks, and gets them back once it catches
// up; the lag is measured by WAL positions, so a paused replica of an idle
// primary is not lagging until something is written.
func TestLaggingReplicaDegradesToPrimary(t *testing.T) {
	p := thePair(t)
	s, tenantID := startOnReplica(t, p, map[string]string{"BPC_DATABASE_READ_MAX_LAG_MS": "300"})

	p.pauseReplay(t)
	product, err := s.st.CreateBatteryProduct(t.Context(), tenantID, "SKU-L1", "Written while the replica lags")
	require.NoError(t, err)
	waitRoute(t, s.router, store.TargetPrimary, store.ReasonReplicaLagging)
	require.Equal(t, []uuid.UUID{product.BatteryProductID}, s.productIDs(t, tenantID), "the primary serves the list")
	require.Positive(t, readsBy(s.router, store.TargetPrimary, store.ReasonReplicaLagging))
	status, body := s.get(t, "/v1/health/ready", "")
	require.Equal(t, http.StatusOK, status, "a lagging replica does not make the service unready: %s", body)
	require.Contains(t, string(body), "read_replica")

	p.resumeReplay(t)
	waitRoute(t, s.router, store.TargetReplica, store.ReasonReplicaHealthy)
	require.Equal(t, []uuid.UUID{product.BatteryProductID}, s.productIDs(t, tenantID))
}

// A replica that is down sends reads to the primary (readiness stays
// 200), and gets them back once it is up.
func TestReplicaDownDegradesToPrimary(t *testing.T) {
	p := thePair(t)
	s, tenantID := startOnReplica(t, p, nil)

	p.stop(t, "replica")
	product, err := s.st.CreateBatteryProduct(t.Context(), tenantID, "SKU-D1", "Written while the replica is down")
	require.NoError(t, err)
	// The first list may find the replica gone before the monitor does:
	// it is made again on the primary either way.
	require.Equal(t, []uuid.UUID{product.BatteryProductID}, s.productIDs(t, tenantID))
	waitRoute(t, s.router, store.TargetPrimary, store.ReasonReplicaDown)
	require.Equal(t, []uuid.UUID{product.BatteryProductID}, s.productIDs(t, tenantID))
	status, body := s.get(t, "/v1/health/ready", "")
	require.Equal(t, http.StatusOK, status, "the replica is optional: %s", body)

	p.start(t, "replica")
	waitRoute(t, s.router, store.TargetReplica, store.ReasonReplicaHealthy)
	waitFor(t, "the replica's list to show the product", func() bool {
		return len(s.productIDs(t, tenantID)) == 1
	})
}

// A version activated on the primary that the replica has not replayed
// is found (looked up again on the primary): no false 404; nor is an
// issuer's directory.
func TestJustActivatedVersionIsNotA404(t *testing.T) {
	p := thePair(t)
	s, tenantID := startOnReplica(t, p, map[string]string{"BPC_DATABASE_READ_MAX_LAG_MS": "3600000"})

	p.pauseReplay(t)
	active := fixture.ActiveNMC811(t, s.st, testriver.Inserter(t, s.pool), tenantID, "Activated a moment ago")
	id := active.Version.PassportVersionID
	var onReplica int
	require.NoError(t, p.pool(t, p.replicaURL).QueryRow(t.Context(),
		`SELECT count(*) FROM passport_versions WHERE passport_version_id = $1`, id).Scan(&onReplica))
	require.Zero(t, onReplica, "the replica has not replayed the version")

	status, body := s.get(t, "/public/v1/passport-versions/"+id.String(), "application/json")
	require.Equal(t, http.StatusOK, status, "found on the primary: %s", body)
	require.Contains(t, string(body), `"verified":true`)
	require.Positive(t, readsBy(s.router, store.TargetPrimary, store.ReasonNotReplayed))

	status, _ = s.get(t, "/public/v1/passport-versions/"+uuid.NewString(), "application/json")
	require.Equal(t, http.StatusNotFound, status, "an unknown version is still a 404")

	// So is an issuer's directory made a moment ago.
	fixture.Issuer(t, s.st, testriver.Inserter(t, s.pool), tenantID, "Replica Test Issuer GmbH", false)
	status, body = s.get(t, "/public/v1/issuers/"+tenantID.String(), "application/json")
	require.Equal(t, http.StatusOK, status, "found on the primary: %s", body)
	require.Contains(t, string(body), "Replica Test Issuer GmbH")
}

// While the primary is down (restarting), the public page of a version
// the replica has keeps answering from the replica; the primary comes
// back and the service with it.
func TestPublicPageServedByReplicaWhilePrimaryRestarts(t *testing.T) {
	p := thePair(t)
	s, tenantID := startOnReplica(t, p, nil)
	active := fixture.ActiveNMC811(t, s.st, testriver.Inserter(t, s.pool), tenantID, "Scanned during a restart")
	id := active.Version.PassportVersionID
	waitReplicated(t, p, "passport_versions", "passport_version_id", id)

	p.stop(t, "primary")
	// The monitor, unable to reach the primary, keeps the replica serving.
	for range 3 {
		s.router.Check(t.Context())
	}
	target, reason := s.router.Route()
	require.Equal(t, store.TargetReplica, target, "reason %s", reason)
	require.Equal(t, store.ReasonReplicaPrimaryDown, reason, "the replica serves under its own reason while the primary is away")

	status, body := s.get(t, "/public/v1/passport-versions/"+id.String(), "text/html")
	require.Equal(t, http.StatusOK, status, "the page answers from the replica: %s", body)
	require.Contains(t, string(body), "Scanned during a restart")
	status, body = s.get(t, "/p/"+id.String(), "application/json")
	require.NotEqual(t, http.StatusServiceUnavailable, status, "the link route reads the replica too: %s", body)

	p.start(t, "primary")
	waitFor(t, "the primary to serve the list routes again", func() bool {
		status, _ := s.get(t, "/v1/battery-products?tenant_id="+tenantID.String(), "")
		return status == http.StatusOK
	})
	waitRoute(t, s.router, store.TargetReplica, store.ReasonReplicaHealthy)
}

// bpc doctor reports the replica: streaming, a copy of the primary; a
// read URL pointing at another cluster fails the report.
func TestDoctorReportsTheReplica(t *testing.T) {
	p := thePair(t)
	primary, replica := p.pool(t, p.primaryURL), p.pool(t, p.replicaURL)
	rep, err := doctor.CheckReplica(t.Context(), primary, replica)
	require.NoError(t, err)
	require.Equal(t, doctor.ReplicaReport{Reachable: true, Standby: true, SameCluster: true, ReplayLagBytes: rep.ReplayLagBytes}, rep)
	report := doctor.Report{OK: true}
	report.AddReplica(rep)
	var text strings.Builder
	report.WriteText(&text)
	require.Contains(t, text.String(), "read replica: streaming")
	require.True(t, report.OK)

	// As `bpc doctor` prints it with BPC_DATABASE_READ_URL set.
	var stdout, stderr strings.Builder
	env := map[string]string{"DATABASE_URL": p.primaryURL, "BPC_DATABASE_READ_URL": p.replicaURL, "BPC_ENV": "test"}
	err = cli.Run(t.Context(), []string{"doctor"}, func(k string) string { return env[k] }, &stdout, &stderr)
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	require.Contains(t, stdout.String(), "read replica: streaming")

	// The tests' own Postgres is another cluster.
	other, err := doctor.CheckReplica(t.Context(), primary, p.pool(t, testdb.URL()))
	require.NoError(t, err)
	require.True(t, other.Reachable)
	require.False(t, other.SameCluster)
	report = doctor.Report{OK: true}
	report.AddReplica(other)
	require.False(t, report.OK)
}

// routerOver returns a read router over the pair's primary and replica,
// with no monitor running: the test checks when it wants.
func (p pair) routerOver(t *testing.T, maxLag time.Duration) (*store.ReadRouter, *pgxpool.Pool, *pgxpool.Pool) {
	t.Helper()
	primary, replica := p.pool(t, p.primaryURL), p.pool(t, p.replicaURL)
	return store.NewReadRouter(primary, replica, store.ReadRouterOptions{MaxLag: maxLag}), primary, replica
}

// checkUntil checks the replica until reads go to target for reason,
// returning every route seen on the way.
func checkUntil(t *testing.T, r *store.ReadRouter, target, reason string) []string {
	t.Helper()
	var seen []string
	waitFor(t, "reads routed to "+target+" ("+reason+")", func() bool {
		r.Check(t.Context())
		tg, rs := r.Route()
		if len(seen) == 0 || seen[len(seen)-1] != tg+" "+rs {
			seen = append(seen, tg+" "+rs)
		}
		return tg == target && rs == reason
	})
	return seen
}

// The monitor's first check of a replica that is behind does not trust
// it: one position of the primary, just taken, says nothing of how long
// ago the replica fell behind, so its lag is not measured yet and reads
// stay on the primary (replica_unchecked). Within the lag bound's age the
// replica is called lagging, never healthy on the way; once it replays,
// it serves.
func TestFirstCheckDoesNotTrustAReplicaBehind(t *testing.T) {
	p := thePair(t)
	p.pauseReplay(t)
	tolerant, primary, _ := p.routerOver(t, time.Hour)
	strict, _, _ := p.routerOver(t, 200*time.Millisecond)
	// Committed with synchronous_commit on (the pair's primary has it
	// off): pg_current_wal_lsn, the primary's position, then includes it
	// at once, not at the WAL writer's next round.
	tx, err := primary.Begin(t.Context())
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), "SET LOCAL synchronous_commit = on")
	require.NoError(t, err)
	_, err = store.New(tx).CreateTenant(t.Context(), "replica-"+uuid.NewString()[:8], "Not replayed")
	require.NoError(t, err)
	require.NoError(t, tx.Commit(t.Context()))

	tolerant.Check(t.Context())
	target, reason := tolerant.Route()
	require.Equal(t, []string{store.TargetPrimary, store.ReasonReplicaUnchecked}, []string{target, reason},
		"a replica that has not replayed the first position seen has a lag no check has measured")
	require.Equal(t, []string{"primary replica_unchecked", "primary replica_lagging"},
		checkUntil(t, strict, store.TargetPrimary, store.ReasonReplicaLagging))
	require.Greater(t, strict.Lag(), 200*time.Millisecond)

	p.resumeReplay(t)
	checkUntil(t, tolerant, store.TargetReplica, store.ReasonReplicaHealthy)
	checkUntil(t, strict, store.TargetReplica, store.ReasonReplicaHealthy)
}

// A read URL that reaches the primary itself is not trusted as a replica
// (reads go to the primary as replica_not_standby); bpc doctor fails,
// saying so.
func TestReadURLAtThePrimaryIsNotAReplica(t *testing.T) {
	p := thePair(t)
	primary := p.pool(t, p.primaryURL)
	r := store.NewReadRouter(primary, p.pool(t, p.primaryURL), store.ReadRouterOptions{})
	r.Check(t.Context())
	target, reason := r.Route()
	require.Equal(t, []string{store.TargetPrimary, store.ReasonReplicaNotStandby}, []string{target, reason})

	var stdout, stderr strings.Builder
	env := map[string]string{"DATABASE_URL": p.primaryURL, "BPC_DATABASE_READ_URL": p.primaryURL, "BPC_ENV": "test"}
	err := cli.Run(t.Context(), []string{"doctor"}, func(k string) string { return env[k] }, &stdout, &stderr)
	require.Error(t, err, "stdout:\n%s", stdout.String())
	require.Contains(t, stdout.String(), "read replica: NOT a replica: BPC_DATABASE_READ_URL reaches the primary itself")
}

// A read the replica cancels for a recovery conflict after it has sent
// some rows (the primary took a lock the replay must apply: SQLSTATE
// 40001, "canceling statement due to conflict with recovery") is made
// again on the primary, whole: the caller sees the primary's rows, each
// once, and no error.
func TestRecoveryConflictIsReadAgainOnThePrimary(t *testing.T) {
	p := thePair(t)
	r, primary, replica := p.routerOver(t, time.Hour)
	table := "conflict_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	_, err := primary.Exec(t.Context(), `CREATE TABLE `+table+` (x int); INSERT INTO `+table+` VALUES (1), (2), (3)`)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = primary.Exec(context.Background(), `DROP TABLE IF EXISTS `+table) })
	waitFor(t, table+" on the replica", func() bool {
		var n int
		err := replica.QueryRow(t.Context(), `SELECT count(*) FROM `+table).Scan(&n)
		return err == nil && n == 3
	})
	// Replay waits this long for a read in its way (30 s by default)
	// before cancelling it.
	p.replicaExec(t, "ALTER SYSTEM SET max_standby_streaming_delay = '100ms'")
	p.replicaExec(t, "SELECT pg_reload_conf()")
	t.Cleanup(func() {
		p.replicaExec(t, "ALTER SYSTEM RESET max_standby_streaming_delay")
		p.replicaExec(t, "SELECT pg_reload_conf()")
	})
	checkUntil(t, r, store.TargetReplica, store.ReasonReplicaHealthy)

	// On the replica the read sends rows 1 and 2, then sleeps at row 3
	// until the conflict cancels it; on the primary it does not sleep.
	type result struct {
		xs  []int32
		err error
	}
	done := make(chan result, 1)
	go func() {
		rows, err := r.Query(t.Context(), `SELECT x FROM `+table+` CROSS JOIN LATERAL
			(SELECT pg_sleep(CASE WHEN pg_is_in_recovery() AND x = 3 THEN 60 ELSE 0 END)) s`)
		if err != nil {
			done <- result{err: err}
			return
		}
		xs, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		done <- result{xs, err}
	}()
	waitFor(t, "the read to sleep on the replica", func() bool {
		var n int
		err := replica.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event = 'PgSleep' AND query LIKE '%`+table+`%'`).Scan(&n)
		return err == nil && n == 1
	})
	_, err = primary.Exec(t.Context(), `BEGIN; LOCK TABLE `+table+` IN ACCESS EXCLUSIVE MODE; COMMIT`)
	require.NoError(t, err)

	var res result
	select {
	case res = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("gave up waiting (60 s) for the read")
	}
	require.NoError(t, res.err)
	require.Equal(t, []int32{1, 2, 3}, res.xs)
	require.EqualValues(t, 1, readsBy(r, store.TargetPrimary, store.ReasonReplicaError))
	require.Zero(t, readsBy(r, store.TargetReplica, store.ReasonReplicaHealthy))
}
