package e2e

// serviceProc runs the real bpc binary as a child process over a test's own
// schema: the tests that must show the process itself survives (the hostile
// suite) or that a shell script works against a real service (the README
// walk-through) use it. An in-process harness could not tell "the request
// failed" from "the process died".

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/doctor"
	"github.com/bpc-platform/bpc/internal/testdb"
)

var (
	bpcBinOnce sync.Once
	bpcBinPath string
	bpcBinErr  error
)

// bpcBinary builds ./cmd/bpc once per test binary run, into a directory that
// lives as long as the test process.
func bpcBinary(t *testing.T) string {
	t.Helper()
	bpcBinOnce.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			bpcBinErr = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		dir, err := os.MkdirTemp("", "bpc-test-bin-")
		if err != nil {
			bpcBinErr = err
			return
		}
		bin := filepath.Join(dir, "bpc")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/bpc")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			bpcBinErr = fmt.Errorf("go build ./cmd/bpc: %w\n%s", err, b)
			return
		}
		bpcBinPath = bin
	})
	require.NoError(t, bpcBinErr)
	return bpcBinPath
}

// serviceProc is one `bpc serve` child process.
type serviceProc struct {
	t      *testing.T
	bin    string
	dir    string
	env    map[string]string
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:port
	stdout string // JSON log
	stderr string // banner, fatal errors (a Go runtime crash lands here)
	done   chan struct{}
	client *http.Client
}

var listenBanner = regexp.MustCompile(`listening on (\S+)`)

// startService migrates a fresh schema with the binary and starts
// `bpc serve --role=<role>` on a loopback port with env over test defaults.
// The process is killed when the test ends; its logs are shown if it failed.
func startService(t *testing.T, role string, env map[string]string) *serviceProc {
	t.Helper()
	_, schemaURL := testdb.EmptySchema(t)
	return startServiceAt(t, role, schemaURL, env)
}

// startServiceAt is startService over dbURL (a database, or a schema through
// search_path).
func startServiceAt(t *testing.T, role, dbURL string, env map[string]string) *serviceProc {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	q := u.Query()
	q.Set("pool_max_conns", "10")
	u.RawQuery = q.Encode()
	p := &serviceProc{t: t, bin: bpcBinary(t), dir: t.TempDir(), done: make(chan struct{}),
		client: &http.Client{Timeout: 30 * time.Second}}
	p.env = map[string]string{
		"PATH":                           os.Getenv("PATH"),
		"HOME":                           os.Getenv("HOME"),
		"DATABASE_URL":                   u.String(),
		"BPC_ENV":                        "test",
		"BPC_ADMIN_TOKEN":                testToken,
		"BPC_HTTP_ADDR":                  "127.0.0.1:0",
		"BPC_WORKER_ID":                  "proc-" + strconv.Itoa(os.Getpid()),
		"BPC_JOBS_POLL_INTERVAL_MS":      "50",
		"BPC_WORKER_SHUTDOWN_TIMEOUT_MS": "3000",
		"BPC_EXPORT_DIR":                 filepath.Join(p.dir, "exports"),
		"BPC_LOG_JSON":                   "true",
		// Tests count jobs: no periodic maintenance jobs.
		"BPC_MAINTENANCE_CONSISTENCY_INTERVAL_MS": "0",
		"BPC_MAINTENANCE_RETENTION_INTERVAL_MS":   "0",
	}
	for k, v := range env {
		p.env[k] = v
	}
	out, err := p.command("migrate").CombinedOutput()
	require.NoError(t, err, "bpc migrate: %s", out)

	p.stdout, p.stderr = filepath.Join(p.dir, "serve.stdout.jsonl"), filepath.Join(p.dir, "serve.stderr.log")
	outF, err := os.Create(p.stdout)
	require.NoError(t, err)
	errF, err := os.Create(p.stderr)
	require.NoError(t, err)
	p.cmd = p.command("serve", "--role="+role)
	p.cmd.Stdout, p.cmd.Stderr = outF, errF
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		_ = outF.Close()
		_ = errF.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("bpc serve stderr:\n%s", tailFile(p.stderr, 60))
			t.Logf("bpc serve log (last lines):\n%s", tailFile(p.stdout, 60))
		}
	})

	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(p.stderr)
		if m := listenBanner.FindSubmatch(b); m != nil {
			p.base = "http://" + displayAddr(string(m[1]))
			// Every response the test gets from the process is checked
			// against the OpenAPI document the process serves.
			checkContract(t, strings.TrimPrefix(p.base, "http://"), p.base)
			p.client.Transport = contractTransport{next: http.DefaultTransport}
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("bpc serve exited before listening (%s):\n%s", p.cmd.ProcessState, tailFile(p.stderr, 50))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("bpc serve did not print its listen address within 60 s:\n%s", tailFile(p.stderr, 50))
		}
	}
}

// command is the binary with the process's environment, in its own process
// group (so cleanup kills what it starts too).
func (p *serviceProc) command(args ...string) *exec.Cmd {
	cmd := exec.Command(p.bin, args...)
	cmd.Env = p.environ()
	cmd.Dir = p.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// environ is env as KEY=VALUE lines, sorted; nothing else is inherited.
func (p *serviceProc) environ() []string {
	out := make([]string, 0, len(p.env))
	for k, v := range p.env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func (p *serviceProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// requireAlive fails the test, showing how the process ended, if it exited.
func (p *serviceProc) requireAlive() {
	p.t.Helper()
	if p.exited() {
		p.t.Fatalf("bpc serve exited (%s):\n%s", p.cmd.ProcessState, tailFile(p.stderr, 40))
	}
}

// do sends a request with headers (none added) and returns the status, the
// response headers and the body. A transport error fails the test.
func (p *serviceProc) do(method, path string, body any, headers map[string]string) (int, http.Header, []byte) {
	p.t.Helper()
	return send(p.t, p.client, method, p.base+path, body, headers)
}

// admin sends a request with the platform token and decodes a JSON answer
// into out (when out is not nil and there is a body).
func (p *serviceProc) admin(method, path string, body, out any) int {
	p.t.Helper()
	status, _, raw := p.do(method, path, body, map[string]string{"Authorization": "Bearer " + testToken})
	if out != nil && len(raw) > 0 {
		require.NoError(p.t, json.Unmarshal(raw, out), "%s %s → %d %s", method, path, status, raw)
	}
	return status
}

// doctor runs `bpc doctor --json` against the process's database and
// returns its report; exit status 1 (drift) is a report, not an error.
func (p *serviceProc) doctor() doctor.Report {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := p.command("doctor", "--json")
	cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	cmd.Env, cmd.Dir = p.environ(), p.dir
	out, _ := cmd.Output()
	var rep doctor.Report
	require.NoError(p.t, json.Unmarshal(out, &rep), "bpc doctor --json: %s", out)
	return rep
}

// dbPool returns a pool on the process's database (its schema), closed
// when the test ends.
func (p *serviceProc) dbPool() *pgxpool.Pool {
	p.t.Helper()
	pool, err := pgxpool.New(context.Background(), p.env["DATABASE_URL"])
	require.NoError(p.t, err)
	p.t.Cleanup(pool.Close)
	return pool
}

// tailFile returns the last n lines of the file at path.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
