package e2e

// TestReadmeRunsAsWritten runs every shell block of README.md, in order,
// against a real service, as a new user would type them. The convention the
// README follows (CONTRIBUTING.md, "Tests", says the same):
//
//   - A fence tagged sh, bash or shell is run; one tagged text (or any other
//     language: json, yaml, …) is shown, not run. A fence with no tag, or
//     tagged console (prompts and output mixed cannot be run as written), is
//     an error: a command cannot hide from the test.
//   - Each block runs with `bash -euo pipefail` in a process of its own, from
//     the repository's root, as in a new terminal: it defines every variable
//     it uses, or reads it from the environment with a default
//     (`${BPC_URL:-http://127.0.0.1:8080}`) or from a file an earlier block
//     left (`.bpc-dev/admin-token`, `demo-out/`). An undefined variable is an
//     error. The environment every block shares is the caller's, without
//     BPC_* and the other variables the README reads, plus where the service
//     of this test is: BPC_HTTP_ADDR and BPC_URL (a free loopback port),
//     DATABASE_URL (a fresh schema of TEST_DATABASE_URL) and HOOK (a free
//     loopback address for the walk-through's receiver).
//   - A comment `# → TEXT` states output: some line the block prints (stdout
//     or stderr) must match TEXT, where … stands for any characters.
//   - `<!-- readme-test: background -->` on the line before a block: the block
//     starts a service (`make run`). It runs in the background until the
//     service answers /v1/health/ready; a later background block stops it
//     first with SIGINT, as Ctrl-C would, and the test stops the last one.
//   - `<!-- readme-test: skip REASON -->`: the block is not run; the test
//     prints the reason. For what cannot run inside the tests (make test
//     itself); at most maxSkipped of them.
//
// What the blocks write lands where the README says: bin/bpc is rebuilt,
// .bpc-dev/admin-token is read (created on a fresh clone) and demo-out/ is
// rewritten, as `make run` and `make demo` would.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/testdb"
)

const (
	// readmeMaxLines keeps the README a front door (STYLE.md).
	readmeMaxLines = 300
	// maxSkipped bounds the blocks a marker may keep out of the test.
	maxSkipped = 2
	// blockTimeout and readyTimeout are did-not-hang bounds: the first
	// `make run` of a fresh clone compiles everything.
	blockTimeout = 5 * time.Minute
	readyTimeout = 5 * time.Minute
)

// readmeBlock is one fenced code block of the README.
type readmeBlock struct {
	line   int    // of the opening fence, 1-based
	lang   string // the fence's tag
	body   string
	marker string // "", "background" or "skip"
	reason string // of a skip
}

var (
	fenceOpen   = regexp.MustCompile("^```(.*)$")
	testMarker  = regexp.MustCompile(`^<!--\s*readme-test:\s*(\S+)\s*(.*?)\s*-->$`)
	expectation = regexp.MustCompile(`#\s*→\s*(.+?)\s*$`)
)

// shellLang reports whether a fence's tag makes its block a command block.
func shellLang(lang string) bool {
	return lang == "sh" || lang == "bash" || lang == "shell"
}

// parseReadme returns the fenced blocks of a Markdown text with the marker
// on the line before each, or an error naming the line that breaks the
// convention.
func parseReadme(text string) ([]readmeBlock, error) {
	var blocks []readmeBlock
	lines := strings.Split(text, "\n")
	var marker, reason string
	markerLine := 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := testMarker.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			switch m[1] {
			case "background":
			case "skip":
				if m[2] == "" {
					return nil, fmt.Errorf("README.md:%d: a skip marker needs its reason", i+1)
				}
			default:
				return nil, fmt.Errorf("README.md:%d: unknown readme-test marker %q (background, skip REASON)", i+1, m[1])
			}
			marker, reason, markerLine = m[1], m[2], i+1
			continue
		}
		m := fenceOpen.FindStringSubmatch(line)
		if m == nil {
			if marker != "" && strings.TrimSpace(line) != "" {
				return nil, fmt.Errorf("README.md:%d: the readme-test marker is not followed by a code block", markerLine)
			}
			continue
		}
		lang := strings.TrimSpace(m[1])
		switch {
		case lang == "":
			return nil, fmt.Errorf("README.md:%d: a code block without a language: tag it sh (run by the test) or text (shown only)", i+1)
		case lang == "console":
			return nil, fmt.Errorf("README.md:%d: a console block mixes prompts and output: use sh, with output in # → comments", i+1)
		}
		b := readmeBlock{line: i + 1, lang: lang, marker: marker, reason: reason}
		if marker != "" && !shellLang(lang) {
			return nil, fmt.Errorf("README.md:%d: the readme-test marker is on a %s block, not a shell block", markerLine, lang)
		}
		marker, reason = "", ""
		var body []string
		for i++; ; i++ {
			if i == len(lines) {
				return nil, fmt.Errorf("README.md:%d: the code block is never closed", b.line)
			}
			if strings.TrimSpace(lines[i]) == "```" {
				break
			}
			body = append(body, lines[i])
		}
		b.body = strings.Join(body, "\n") + "\n"
		blocks = append(blocks, b)
	}
	if marker != "" {
		return nil, fmt.Errorf("README.md:%d: the readme-test marker is not followed by a code block", markerLine)
	}
	return blocks, nil
}

// expectations returns the `# → TEXT` comments of a block, each as a
// pattern a line of its output must match.
func expectations(body string) []*regexp.Regexp {
	var out []*regexp.Regexp
	for line := range strings.SplitSeq(body, "\n") {
		m := expectation.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		parts := strings.Split(m[1], "…")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		out = append(out, regexp.MustCompile(strings.Join(parts, ".*")))
	}
	return out
}

// guardedVar finds ${NAME:-…}, ${NAME-…}, ${NAME:?…}, ${NAME:=…}: variables a
// block reads from the environment, stated as such.
var guardedVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*):?[-?=]`)

func TestReadmeParsing(t *testing.T) {
	t.Parallel()
	blocks, err := parseReadme("x\n<!-- readme-test: background -->\n```sh\nmake run\n```\n\n```text\nout\n```\n" +
		"<!-- readme-test: skip it recurses -->\n\n```bash\nmake test # → ok … done\n```\n")
	require.NoError(t, err)
	require.Len(t, blocks, 3)
	require.Equal(t, readmeBlock{line: 3, lang: "sh", body: "make run\n", marker: "background"}, blocks[0])
	require.Equal(t, "text", blocks[1].lang)
	require.Equal(t, readmeBlock{line: 12, lang: "bash", body: "make test # → ok … done\n", marker: "skip", reason: "it recurses"}, blocks[2])
	exp := expectations(blocks[2].body)
	require.Len(t, exp, 1)
	require.True(t, exp[0].MatchString("  ok (3 s) done"))
	require.False(t, exp[0].MatchString("ok"))

	for text, want := range map[string]string{
		"```\nls\n```\n":                                   "without a language",
		"```console\n$ ls\n```\n":                          "console",
		"<!-- readme-test: skip -->\n```sh\nls\n```\n":     "needs its reason",
		"<!-- readme-test: later -->\n```sh\nls\n```\n":    "unknown readme-test marker",
		"<!-- readme-test: background -->\ntext\n":         "not followed by a code block",
		"<!-- readme-test: background -->\n```text\n```\n": "not a shell block",
		"```sh\nls\n": "never closed",
	} {
		_, err := parseReadme(text)
		require.ErrorContains(t, err, want, "%q", text)
	}
}

// bgProcess is a background block's process group.
type bgProcess struct {
	line int
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (p *bgProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGINT to the group, as Ctrl-C in its terminal would, and waits
// for it to end (SIGKILL after a minute).
func (p *bgProcess) stop(t *testing.T) {
	t.Helper()
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		t.Errorf("README.md:%d: the service did not stop within a minute of SIGINT:\n%s", p.line, tailFile(p.log, 30))
	}
	// Whatever the block started in its group (the receiver of the
	// walk-through, say) goes with it.
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}

func TestReadmeRunsAsWritten(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	text := string(raw)
	require.LessOrEqual(t, strings.Count(text, "\n"), readmeMaxLines, "README.md is a front door: at most %d lines, the rest in docs/", readmeMaxLines)
	blocks, err := parseReadme(text)
	require.NoError(t, err)

	var run, skipped, background int
	for _, b := range blocks {
		switch {
		case !shellLang(b.lang):
		case b.marker == "skip":
			skipped++
		default:
			run++
			if b.marker == "background" {
				background++
			}
		}
	}
	require.NotZero(t, background, "README.md has no block that starts the service (marked <!-- readme-test: background -->)")
	require.Greater(t, run-background, 0, "README.md has no shell block to run against the service")
	require.LessOrEqual(t, skipped, maxSkipped, "README.md: at most %d blocks may be kept out of the test", maxSkipped)

	for _, tool := range []string{"bash", "make", "go", "curl", "openssl"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "the README's blocks need %s", tool)
	}

	// Where the service of this test listens, and its database: a schema of
	// its own, named in the libpq form (options=-csearch_path=…) that
	// scripts/pg.sh's pg_isready accepts as well as pgx.
	schema, _ := testdb.EmptySchema(t)
	u, err := url.Parse(testdb.URL())
	require.NoError(t, err)
	q := u.Query()
	q.Set("options", "-csearch_path="+schema)
	u.RawQuery = q.Encode()
	addr := freeLoopbackAddr(t)
	base := "http://" + addr

	// The caller's environment, like a new terminal's, without what would
	// point the blocks elsewhere: BPC_* and the variables the README reads,
	// the database, and a calling make's job server.
	drop := map[string]bool{"DATABASE_URL": true, "MAKEFLAGS": true, "MFLAGS": true, "MAKELEVEL": true, "MAKE_TERMOUT": true, "MAKE_TERMERR": true}
	for _, m := range guardedVar.FindAllStringSubmatch(text, -1) {
		drop[m[1]] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if drop[name] || strings.HasPrefix(name, "BPC") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "DATABASE_URL="+u.String(), "BPC_HTTP_ADDR="+addr, "BPC_URL="+base, "HOOK="+freeLoopbackAddr(t))

	dir := t.TempDir()
	var bg *bgProcess
	t.Cleanup(func() {
		if bg != nil {
			bg.stop(t)
		}
	})
	client := &http.Client{Timeout: 5 * time.Second}
	ready := func() bool {
		resp, err := client.Get(base + "/v1/health/ready")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}

	for n, b := range blocks {
		if !shellLang(b.lang) {
			continue
		}
		if b.marker == "skip" {
			t.Logf("README.md:%d: not run: %s", b.line, b.reason)
			continue
		}
		script := filepath.Join(dir, fmt.Sprintf("block-%02d-line-%d.sh", n, b.line))
		require.NoError(t, os.WriteFile(script, []byte(b.body), 0o600))
		cmd := exec.Command("bash", "-euo", "pipefail", script)
		cmd.Dir, cmd.Env = root, env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		start := time.Now()

		if b.marker == "background" {
			if bg != nil {
				bg.stop(t)
			}
			logPath := script + ".log"
			f, err := os.Create(logPath)
			require.NoError(t, err)
			cmd.Stdout, cmd.Stderr = f, f
			require.NoError(t, cmd.Start())
			bg = &bgProcess{line: b.line, cmd: cmd, log: logPath, done: make(chan struct{})}
			go func(p *bgProcess) {
				_ = p.cmd.Wait()
				_ = f.Close()
				close(p.done)
			}(bg)
			deadline := time.Now().Add(readyTimeout)
			for !ready() {
				if bg.exited() {
					t.Fatalf("README.md:%d: exited (%s) before %s/v1/health/ready answered:\n%s", b.line, bg.cmd.ProcessState, base, tailFile(logPath, 40))
				}
				if time.Now().After(deadline) {
					t.Fatalf("README.md:%d: %s/v1/health/ready did not answer 200 within %s:\n%s", b.line, base, readyTimeout, tailFile(logPath, 40))
				}
				time.Sleep(200 * time.Millisecond)
			}
			t.Logf("README.md:%d: running in the background, ready after %s", b.line, time.Since(start).Round(time.Millisecond))
			continue
		}

		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case err = <-waited:
		case <-time.After(blockTimeout):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = fmt.Errorf("still running after %s: %w", blockTimeout, <-waited)
		}
		// What the block left running (a receiver it started with &).
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		output := out.String()
		if err != nil {
			var exit *exec.ExitError
			status := err.Error()
			if errors.As(err, &exit) {
				status = "exit status " + fmt.Sprint(exit.ExitCode())
			}
			bgLog := ""
			if bg != nil {
				bgLog = "\nthe service's last lines:\n" + tailFile(bg.log, 20)
			}
			t.Fatalf("README.md:%d: the block failed (%s):\n%s\noutput:\n%s%s", b.line, status, b.body, output, bgLog)
		}
		for _, want := range expectations(b.body) {
			found := false
			sc := bufio.NewScanner(strings.NewReader(output))
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				if want.MatchString(sc.Text()) {
					found = true
					break
				}
			}
			require.True(t, found, "README.md:%d: no line of the output matches %q:\n%s", b.line, want, output)
		}
		t.Logf("README.md:%d: ok in %s", b.line, time.Since(start).Round(time.Millisecond))
		if bg != nil && bg.exited() {
			t.Fatalf("README.md:%d: the service of README.md:%d exited (%s):\n%s", b.line, bg.line, bg.cmd.ProcessState, tailFile(bg.log, 40))
		}
	}

	// make demo says where its token came from, and what to do when the
	// service refuses it (a terminal with another BPC_ADMIN_TOKEN).
	demo := exec.Command("make", "demo")
	demo.Dir = root
	demo.Env = append(env[:len(env):len(env)], "BPC_ADMIN_TOKEN=not-the-service-token")
	out, err := demo.CombinedOutput()
	require.Error(t, err, "make demo with a token the service does not know:\n%s", out)
	t.Logf("make demo with a token the service does not know:\n%s", out)
	require.Contains(t, string(out), "demo.sh: admin token from BPC_ADMIN_TOKEN (set in this shell)")
	require.Contains(t, string(out), "answers 401 to the admin token from BPC_ADMIN_TOKEN")
	require.Contains(t, string(out), "restart the service with make run without BPC_ADMIN_TOKEN set")

	// Ctrl-C stops the service gracefully (README, "Two commands").
	if bg != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = syscall.Kill(-bg.cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-bg.done:
		case <-ctx.Done():
			t.Fatalf("the service did not stop within a minute of SIGINT:\n%s", tailFile(bg.log, 30))
		}
		require.Contains(t, tailFile(bg.log, 40), "service stopped", "the service's last lines after SIGINT")
	}
}
