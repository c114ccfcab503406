//go:build chaos

package e2e

// Helpers of the chaos tests (chaos_test.go): the real bpc binary run as
// separate worker processes over a per-test schema, their JSON logs read
// back as the execution log, and a private Postgres cluster the tests may
// restart. Run with `make chaos` or
// `go test -tags chaos -count=1 -run Chaos ./internal/e2e`.

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// Timing of the chaos workers: short leases so that a killed worker's jobs
// come back within seconds.
const (
	chaosLeaseSeconds      = 4
	chaosLeaseRenewSeconds = 1
	chaosReaperInterval    = 500 * time.Millisecond
	chaosShutdownTimeout   = 3 * time.Second
	chaosPollIntervalMS    = 50
)

// chaosEnv is one test's world: a migrated database (schema), a pool and an
// insert-only River client to enqueue through the store, and the worker
// processes.
type chaosEnv struct {
	t      *testing.T
	ctx    context.Context
	bin    string
	dbURL  string // what the processes get as DATABASE_URL
	pool   *pgxpool.Pool
	st     *store.Queries
	ins    *river.Client[pgx.Tx]
	dir    string
	seed   string
	extra  map[string]string // environment overrides for the processes
	mu     sync.Mutex
	procs  []*chaosProc
	nextID int
}

// newChaosEnv migrates a fresh schema of TEST_DATABASE_URL with the binary.
func newChaosEnv(t *testing.T) *chaosEnv {
	t.Helper()
	_, schemaURL := testdb.EmptySchema(t)
	return newChaosEnvAt(t, schemaURL, 8)
}

// newChaosEnvAt uses dbURL (a database or a schema through search_path),
// migrates it with `bpc migrate` and connects. Each process's pool is
// bounded to poolConns: ten processes share one Postgres, whose
// max_connections is often 100.
func newChaosEnvAt(t *testing.T, dbURL string, poolConns int) *chaosEnv {
	t.Helper()
	e := &chaosEnv{t: t, ctx: context.Background(), bin: bpcBinary(t), dir: t.TempDir(), extra: map[string]string{}}
	e.dbURL = withQuery(t, dbURL, "pool_max_conns", strconv.Itoa(poolConns))
	seed := make([]byte, ed25519.SeedSize)
	_, err := rand.Read(seed)
	require.NoError(t, err)
	e.seed = base64.StdEncoding.EncodeToString(seed)

	out, err := e.command("migrate").CombinedOutput()
	require.NoError(t, err, "bpc migrate: %s", out)

	cfg, err := pgxpool.ParseConfig(dbURL)
	require.NoError(t, err)
	cfg.ConnConfig.RuntimeParams["application_name"] = "bpc-chaos-test"
	cfg.ConnConfig.RuntimeParams["bpc.lease_seconds"] = strconv.Itoa(chaosLeaseSeconds)
	cfg.MaxConns = 5
	e.pool, err = pgxpool.NewWithConfig(e.ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(e.pool.Close)
	e.st = store.New(e.pool)
	e.ins = testriver.Inserter(t, e.pool)

	t.Cleanup(func() {
		// Children first (Cleanup runs last-in first-out, so this runs
		// before the pool closes and the schema is dropped).
		e.killAll()
		if t.Failed() {
			e.dumpLogs()
		}
	})
	return e
}

func withQuery(t *testing.T, raw, key, value string) string {
	u, err := url.Parse(raw)
	require.NoError(t, err)
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// env is the environment of a bpc process: nothing inherited but PATH/HOME.
func (e *chaosEnv) env(workerID string) []string {
	vars := map[string]string{
		"PATH":                           os.Getenv("PATH"),
		"HOME":                           os.Getenv("HOME"),
		"DATABASE_URL":                   e.dbURL,
		"BPC_ENV":                        "test",
		"BPC_ADMIN_TOKEN":                testToken,
		"BPC_HTTP_ADDR":                  "127.0.0.1:0",
		"BPC_WORKER_ID":                  workerID,
		"BPC_JOBS_POLL_INTERVAL_MS":      strconv.Itoa(chaosPollIntervalMS),
		"BPC_JOBS_LEASE_SECONDS":         strconv.Itoa(chaosLeaseSeconds),
		"BPC_JOBS_LEASE_RENEW_SECONDS":   strconv.Itoa(chaosLeaseRenewSeconds),
		"BPC_JOBS_REAPER_INTERVAL_MS":    strconv.Itoa(int(chaosReaperInterval / time.Millisecond)),
		"BPC_WORKER_SHUTDOWN_TIMEOUT_MS": strconv.Itoa(int(chaosShutdownTimeout / time.Millisecond)),
		// The scenarios count every job: no periodic maintenance jobs.
		"BPC_MAINTENANCE_CONSISTENCY_INTERVAL_MS": "0",
		"BPC_MAINTENANCE_RETENTION_INTERVAL_MS":   "0",
		"BPC_WORKER_CONCURRENCY":                  "5",
		"BPC_SIGNING_ED25519_PRIVATE_KEY_BASE64":  e.seed,
		"BPC_EXPORT_DIR":                          filepath.Join(e.dir, "exports"),
		"BPC_LOG_JSON":                            "true",
	}
	for k, v := range e.extra {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func (e *chaosEnv) command(args ...string) *exec.Cmd {
	cmd := exec.Command(e.bin, args...)
	cmd.Env = e.env("chaos-tool")
	cmd.Dir = e.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// chaosProc is one `bpc serve` child process.
type chaosProc struct {
	id       string
	cmd      *exec.Cmd
	stdout   string // JSON log
	stderr   string // banner, fatal errors
	addr     string
	done     chan struct{}
	exitedAt time.Time
	state    *os.ProcessState
}

var bannerAddr = regexp.MustCompile(`listening on (\S+)`)

// startWorkers starts n `bpc serve --role=worker` processes and waits for
// each to print its listen address.
func (e *chaosEnv) startWorkers(n int) []*chaosProc {
	e.t.Helper()
	procs := make([]*chaosProc, n)
	for i := range procs {
		procs[i] = e.startProc("worker")
	}
	for _, p := range procs {
		e.waitListening(p)
	}
	return procs
}

// startProc starts one process of role without waiting for it.
func (e *chaosEnv) startProc(role string) *chaosProc {
	e.t.Helper()
	e.mu.Lock()
	id := fmt.Sprintf("chaos-%d", e.nextID)
	e.nextID++
	e.mu.Unlock()
	p := &chaosProc{id: id, done: make(chan struct{}),
		stdout: filepath.Join(e.dir, id+".stdout.jsonl"), stderr: filepath.Join(e.dir, id+".stderr.log")}
	outF, err := os.Create(p.stdout)
	require.NoError(e.t, err)
	errF, err := os.Create(p.stderr)
	require.NoError(e.t, err)
	p.cmd = exec.Command(e.bin, "serve", "--role="+role)
	p.cmd.Env = e.env(id)
	p.cmd.Dir = e.dir
	p.cmd.Stdout, p.cmd.Stderr = outF, errF
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(e.t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		p.exitedAt = time.Now()
		p.state = p.cmd.ProcessState
		_ = outF.Close()
		_ = errF.Close()
		close(p.done)
	}()
	e.mu.Lock()
	e.procs = append(e.procs, p)
	e.mu.Unlock()
	return p
}

func (e *chaosEnv) waitListening(p *chaosProc) {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(p.stderr)
		if m := bannerAddr.FindSubmatch(b); m != nil {
			p.addr = displayAddr(string(m[1]))
			return
		}
		select {
		case <-p.done:
			e.t.Fatalf("%s exited before listening (%s):\n%s", p.id, p.state, tail(p.stderr, 50))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s did not print its listen address within 60 s:\n%s", p.id, tail(p.stderr, 50))
		}
	}
}

func (p *chaosProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process (not its group).
func (p *chaosProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, syscall.Kill(p.cmd.Process.Pid, sig))
}

// killAll SIGKILLs every child's process group and reaps them.
func (e *chaosEnv) killAll() {
	e.mu.Lock()
	procs := append([]*chaosProc(nil), e.procs...)
	e.mu.Unlock()
	for _, p := range procs {
		if !p.exited() {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			e.t.Logf("%s (pid %d) did not exit after SIGKILL", p.id, p.cmd.Process.Pid)
		}
	}
}

func (e *chaosEnv) dumpLogs() {
	e.mu.Lock()
	defer e.mu.Unlock()
	// Keep the whole logs: t.TempDir is removed when the test ends.
	keep := filepath.Join(os.TempDir(), fmt.Sprintf("bpc-chaos-logs-%s-%s", e.t.Name(), time.Now().UTC().Format("20060102T150405")))
	if err := os.MkdirAll(keep, 0o755); err == nil {
		for _, p := range e.procs {
			for _, f := range []string{p.stdout, p.stderr} {
				if b, err := os.ReadFile(f); err == nil {
					_ = os.WriteFile(filepath.Join(keep, filepath.Base(f)), b, 0o644)
				}
			}
		}
		e.t.Logf("worker logs kept in %s", keep)
	}
	for _, p := range e.procs {
		e.t.Logf("---- %s stderr (last 50 lines) ----\n%s", p.id, tail(p.stderr, 50))
		e.t.Logf("---- %s stdout (last 50 lines) ----\n%s", p.id, tail(p.stdout, 50))
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// --- work -----------------------------------------------------------------------

// enqueue inserts the jobs through the store (the mirror writes the SSOT
// rows in the same transactions), in batches.
func (e *chaosEnv) enqueue(args []jobargs.Args) {
	e.t.Helper()
	const batch = 100
	for i := 0; i < len(args); i += batch {
		reqs := make([]passport.EnqueueRequest, 0, batch)
		for _, a := range args[i:min(i+batch, len(args))] {
			require.NoError(e.t, a.Validate())
			reqs = append(reqs, passport.EnqueueRequest{Args: a})
		}
		require.NoError(e.t, e.st.InTx(e.ctx, func(tx pgx.Tx) error {
			_, err := passport.EnqueueTx(e.ctx, e.st.WithTx(tx), e.ins, reqs)
			return err
		}))
	}
}

// statusCounts counts SSOT jobs by status.
func (e *chaosEnv) statusCounts() map[string]int {
	e.t.Helper()
	rows, err := e.pool.Query(e.ctx, `SELECT status, count(*) FROM jobs GROUP BY status`)
	require.NoError(e.t, err)
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		require.NoError(e.t, rows.Scan(&s, &n))
		out[s] = n
	}
	require.NoError(e.t, rows.Err())
	return out
}

// waitAllSucceeded waits until every one of want SSOT jobs is SUCCEEDED.
func (e *chaosEnv) waitAllSucceeded(want int, timeout time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	var last map[string]int
	for time.Now().Before(deadline) {
		last = e.statusCounts()
		if last[bpctype.StatusSucceeded] == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("after %s not every job succeeded: want %d SUCCEEDED, have %v; river states: %v",
		timeout, want, last, e.riverStates())
}

func (e *chaosEnv) riverStates() map[string]int {
	rows, err := e.pool.Query(e.ctx, `SELECT state::text, count(*) FROM river_job GROUP BY state`)
	if err != nil {
		return map[string]int{"error: " + err.Error(): 0}
	}
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		_ = rows.Scan(&s, &n)
		out[s] = n
	}
	return out
}

// requireSettled is how every scenario ends: no drift between River and the
// mirror, an intact audit chain, nothing RUNNING, every job SUCCEEDED.
func (e *chaosEnv) requireSettled(want int) {
	e.t.Helper()
	counts := e.statusCounts()
	require.Equal(e.t, map[string]int{bpctype.StatusSucceeded: want}, counts, "SSOT job statuses")
	rep, err := e.st.CheckConsistency(e.ctx)
	require.NoError(e.t, err)
	require.True(e.t, rep.OK(), "mirror drift (%d): %+v", rep.DriftCount, rep.Drifts)
	n, err := passport.VerifyAuditChain(e.ctx, e.st, store.DevTenantID)
	require.NoError(e.t, err, "audit chain")
	e.t.Logf("settled: %d jobs SUCCEEDED, %d River jobs, audit chain ok (%d events)", want, rep.RiverJobs, n)
}

// --- the execution log ----------------------------------------------------------

// transition is one "job transition" line of a worker's log.
type transition struct {
	Proc       string
	Time       time.Time `json:"time"`
	Msg        string    `json:"msg"`
	JobID      string    `json:"job_id"`
	RiverJobID int64     `json:"river_job_id"`
	Type       string    `json:"type"`
	Status     string    `json:"status"`
	Attempt    int       `json:"attempt"`
	DurationMS int64     `json:"duration_ms"`
	ErrorCode  string    `json:"error_code"`
}

// transitions reads every process's transition lines.
func (e *chaosEnv) transitions() []transition {
	e.t.Helper()
	e.mu.Lock()
	procs := append([]*chaosProc(nil), e.procs...)
	e.mu.Unlock()
	var out []transition
	for _, p := range procs {
		f, err := os.Open(p.stdout)
		require.NoError(e.t, err)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var tr transition
			if json.Unmarshal(sc.Bytes(), &tr) != nil || tr.Msg != "job transition" {
				continue
			}
			tr.Proc = p.id
			out = append(out, tr)
		}
		require.NoError(e.t, sc.Err())
		_ = f.Close()
	}
	return out
}

// logSummary is what the transition lines say about each River job.
type logSummary struct {
	succeeded map[int64][]string // river job → processes that logged SUCCEEDED
	runs      map[int64][]jobRun // river job → its runs, from RUNNING to the outcome (or the process's end)
	byProc    map[string]int     // process → SUCCEEDED lines
	statuses  map[string]int     // status/error_code → lines (reaper lines too)
	reaped    int                // lines of the lease reaper (no job_id)
}

// jobRun is one execution of a job in one process.
type jobRun struct {
	proc       string
	attempt    int
	start, end time.Time
	outcome    string // "" when the process ended first
	code       string
}

func (r jobRun) String() string {
	out := r.outcome
	if out == "" {
		out = "(process ended)"
	}
	return fmt.Sprintf("%s attempt %d %s→%s %s %s", r.proc, r.attempt,
		r.start.Format("15:04:05.000"), r.end.Format("15:04:05.000"), out, r.code)
}

// summarize pairs each process's RUNNING lines with their outcome lines.
func (e *chaosEnv) summarize() logSummary {
	e.t.Helper()
	s := logSummary{succeeded: map[int64][]string{}, runs: map[int64][]jobRun{}, byProc: map[string]int{}, statuses: map[string]int{}}
	e.mu.Lock()
	exited := map[string]time.Time{}
	for _, p := range e.procs {
		if p.exited() {
			exited[p.id] = p.exitedAt
		}
	}
	e.mu.Unlock()
	open := map[string]map[int64]jobRun{}
	for _, tr := range e.transitions() {
		s.statuses[tr.Status+"/"+tr.ErrorCode]++
		if tr.JobID == "" {
			s.reaped++ // the reaper's line about another process's job
			continue
		}
		if open[tr.Proc] == nil {
			open[tr.Proc] = map[int64]jobRun{}
		}
		if tr.Status == bpctype.StatusRunning {
			open[tr.Proc][tr.RiverJobID] = jobRun{proc: tr.Proc, attempt: tr.Attempt, start: tr.Time}
			continue
		}
		r, ok := open[tr.Proc][tr.RiverJobID]
		if !ok {
			e.t.Errorf("%s logged %s for river job %d without RUNNING", tr.Proc, tr.Status, tr.RiverJobID)
			continue
		}
		delete(open[tr.Proc], tr.RiverJobID)
		r.end, r.outcome, r.code = tr.Time, tr.Status, tr.ErrorCode
		s.runs[tr.RiverJobID] = append(s.runs[tr.RiverJobID], r)
		if tr.Status == bpctype.StatusSucceeded {
			s.succeeded[tr.RiverJobID] = append(s.succeeded[tr.RiverJobID], tr.Proc)
			s.byProc[tr.Proc]++
		}
	}
	for proc, m := range open {
		end, ok := exited[proc]
		if !ok {
			end = time.Now()
		}
		for id, r := range m {
			r.end = end
			s.runs[id] = append(s.runs[id], r)
		}
	}
	for _, rs := range s.runs {
		sort.Slice(rs, func(i, j int) bool { return rs[i].start.Before(rs[j].start) })
	}
	return s
}

// requireExactlyOnce asserts that the logs show each job SUCCEEDED at most
// once (exactly once when all is true), never running in two processes at
// the same time, and no attempt run twice except after a shutdown snoozed it
// back (which spends no attempt).
func (s logSummary) requireExactlyOnce(t *testing.T, jobs int, all bool) {
	t.Helper()
	if all && len(s.succeeded) != jobs {
		var missing []string
		for id, rs := range s.runs {
			if len(s.succeeded[id]) == 0 {
				missing = append(missing, fmt.Sprintf("%d %v", id, rs))
			}
		}
		sort.Strings(missing)
		t.Fatalf("%d of %d river jobs have a SUCCEEDED line; without one: %v", len(s.succeeded), jobs, missing)
	}
	for id, ps := range s.succeeded {
		require.Len(t, ps, 1, "river job %d SUCCEEDED in %v", id, ps)
	}
	for id, rs := range s.runs {
		for i := range rs {
			for j := i + 1; j < len(rs); j++ {
				a, b := rs[i], rs[j]
				if a.proc != b.proc && a.start.Before(b.end) && b.start.Before(a.end) {
					t.Fatalf("river job %d ran in %s (attempt %d, %s–%s) and %s (attempt %d, %s–%s) at the same time",
						id, a.proc, a.attempt, a.start.Format(time.StampMicro), a.end.Format(time.StampMicro),
						b.proc, b.attempt, b.start.Format(time.StampMicro), b.end.Format(time.StampMicro))
				}
				if a.attempt == b.attempt && a.outcome != bpctype.StatusQueued {
					t.Fatalf("river job %d attempt %d ran twice: in %s (ended %q %s) and in %s",
						id, a.attempt, a.proc, a.outcome, a.code, b.proc)
				}
			}
		}
	}
}

// --- health ---------------------------------------------------------------------

// ready returns the status of GET /v1/health/ready, or 0 when unreachable.
func (p *chaosProc) ready(client *http.Client) int {
	resp, err := client.Get("http://" + p.addr + "/v1/health/ready")
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// --- a private Postgres cluster ---------------------------------------------------

// pgCluster is a throwaway Postgres cluster (initdb + pg_ctl) on a free
// loopback port, owned by an unprivileged user when the test runs as root
// (initdb and pg_ctl refuse root), as scripts/pg.sh does.
type pgCluster struct {
	t      *testing.T
	bin    string // directory with initdb and pg_ctl
	base   string
	data   string
	logf   string
	port   int
	runAs  string // "" unless root
	opts   string
	stdout string
}

// findPGBin finds a directory holding initdb and pg_ctl.
func findPGBin() (string, error) {
	var cands []string
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			cands = append(cands, filepath.Dir(r))
		}
		cands = append(cands, filepath.Dir(p))
	}
	globbed, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(globbed)))
	cands = append(cands, globbed...)
	more, _ := filepath.Glob("/usr/pgsql-*/bin")
	cands = append(cands, more...)
	for _, d := range cands {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	return "", errors.New("no initdb/pg_ctl on PATH nor in /usr/lib/postgresql/*/bin")
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// newPGCluster initializes and starts a private cluster, or skips the test
// when Postgres's server binaries are not installed.
func newPGCluster(t *testing.T) *pgCluster {
	t.Helper()
	bin, err := findPGBin()
	if err != nil {
		t.Skipf("skipping: a private Postgres cluster is needed (%v); install the postgresql server package", err)
	}
	c := &pgCluster{t: t, bin: bin}
	if os.Geteuid() == 0 {
		c.runAs = os.Getenv("BPC_PG_USER")
		if c.runAs == "" {
			c.runAs = "bpcpg"
		}
		if _, err := exec.LookPath("runuser"); err != nil {
			t.Skipf("skipping: running as root and no runuser(1) to run Postgres as %s", c.runAs)
		}
		if _, err := user.Lookup(c.runAs); err != nil {
			// Same user scripts/pg.sh creates.
			nologin := "/usr/sbin/nologin"
			if !isExec(nologin) {
				nologin = "/bin/false"
			}
			out, err := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
				"--home-dir", "/nonexistent", "--shell", nologin, c.runAs).CombinedOutput()
			if _, lerr := user.Lookup(c.runAs); lerr != nil {
				t.Skipf("skipping: running as root and cannot create user %s: %v %s", c.runAs, err, out)
			}
		}
	}
	// Short path: the unix socket lives in it (≤ 107 bytes).
	c.base, err = os.MkdirTemp("/tmp", "bpc-chaos-pg-")
	require.NoError(t, err)
	c.data = filepath.Join(c.base, "data")
	c.logf = filepath.Join(c.base, "postgres.log")
	run := filepath.Join(c.base, "run")
	require.NoError(t, os.Mkdir(run, 0o700))
	if c.runAs != "" {
		u, err := user.Lookup(c.runAs)
		require.NoError(t, err)
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		require.NoError(t, os.Chown(c.base, uid, gid))
		require.NoError(t, os.Chown(run, uid, gid))
	}
	t.Cleanup(func() {
		_, _ = c.ctl("stop", "-m", "immediate", "-w", "-t", "30")
		_ = os.RemoveAll(c.base)
	})

	if out, err := c.exec(filepath.Join(bin, "initdb"), "-D", c.data, "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--no-locale"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	c.port = freePort(t)
	// max_connections: two workers' pools, the test's pool, headroom.
	c.opts = fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=100 -c fsync=off -c synchronous_commit=off -c full_page_writes=off", c.port, run)
	if out, err := c.ctl("start", "-o", c.opts, "-w", "-t", "60"); err != nil {
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, tail(c.logf, 30))
	}
	return c
}

// exec runs a Postgres program as the cluster's owner, from /.
func (c *pgCluster) exec(prog string, args ...string) ([]byte, error) {
	var cmd *exec.Cmd
	if c.runAs != "" {
		cmd = exec.Command("runuser", append([]string{"-u", c.runAs, "--", prog}, args...)...)
	} else {
		cmd = exec.Command(prog, args...)
	}
	cmd.Dir = "/"
	// The postmaster pg_ctl forks must not hold our pipes (CombinedOutput
	// would wait for it): its output goes to -l.
	f, err := os.CreateTemp("", "bpc-chaos-pgctl-*.log")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	runErr := cmd.Run()
	out, _ := os.ReadFile(f.Name())
	return out, runErr
}

// ctl runs pg_ctl action on the cluster with its log file.
func (c *pgCluster) ctl(action string, args ...string) ([]byte, error) {
	return c.exec(filepath.Join(c.bin, "pg_ctl"), append([]string{action, "-D", c.data, "-l", c.logf}, args...)...)
}

// restart is `pg_ctl restart -m fast`.
func (c *pgCluster) restart() {
	c.t.Helper()
	if out, err := c.ctl("restart", "-m", "fast", "-o", c.opts, "-w", "-t", "60"); err != nil {
		c.t.Fatalf("pg_ctl restart: %v\n%s\n%s", err, out, tail(c.logf, 30))
	}
}

func (c *pgCluster) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// median and maximum of durations.
func medianMax(ds []time.Duration) (time.Duration, time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2], s[len(s)-1]
}
