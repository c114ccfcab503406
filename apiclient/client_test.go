package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// These tests hold the client to answers a real service gives rarely or
// never (a proxy's HTML, a body that is not JSON, a job stuck RUNNING); the
// demo's tests run the client against the real service.

const (
	testToken  = "apiclient-test-token"
	testTenant = "00000000-0000-0000-0000-00000000de00"
)

func testClient(url string) *Client {
	c := New(url+"/", testToken, testTenant)
	c.PollInterval = time.Millisecond
	c.JobTimeout = 2 * time.Second
	return c
}

func writeEnvelope(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": code, "message": message, "correlation_id": "corr-1", "details": map[string]any{"field": "name"},
	}})
}

func TestDoDecodesResponsesAndErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Authorization") != "Bearer "+testToken:
			writeEnvelope(w, http.StatusUnauthorized, "UNAUTHORIZED", "missing token")
		case r.URL.Path == "/v1/rule-packages":
			writeEnvelope(w, http.StatusConflict, "CONFLICT", "name already taken")
		case r.URL.Path == "/v1/proxy":
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("<html>\n  bad gateway\n</html>"))
		case r.URL.Path == "/v1/echo":
			var in map[string]any
			_ = json.NewDecoder(r.Body).Decode(&in)
			_ = json.NewEncoder(w).Encode(map[string]any{"content_type": r.Header.Get("Content-Type"), "in": in, "query": r.URL.RawQuery})
		default:
			_, _ = w.Write([]byte("not json"))
		}
	}))
	defer srv.Close()
	c := testClient(srv.URL)
	ctx := context.Background()

	var echo struct {
		ContentType string         `json:"content_type"`
		In          map[string]any `json:"in"`
		Query       string         `json:"query"`
	}
	require.NoError(t, c.Do(ctx, http.MethodPost, c.TenantPath("/v1/echo", "limit", "5"), map[string]any{"a": 1}, &echo))
	require.Equal(t, "application/json", echo.ContentType)
	require.Equal(t, map[string]any{"a": float64(1)}, echo.In)
	require.Equal(t, "limit=5&tenant_id="+testTenant, echo.Query)
	var raw []byte
	require.NoError(t, c.Do(ctx, http.MethodGet, "/v1/other", nil, &raw))
	require.Equal(t, "not json", string(raw))
	require.NoError(t, c.Do(ctx, http.MethodGet, "/v1/other", nil, nil))

	err := c.Do(ctx, http.MethodPost, "/v1/rule-packages", map[string]any{"name": "x"}, nil)
	require.EqualError(t, err, `POST /v1/rule-packages: HTTP 409 CONFLICT: name already taken {"field":"name"} (correlation_id corr-1)`)
	var ae *Error
	require.True(t, errors.As(err, &ae))
	require.Equal(t, http.StatusConflict, ae.Status)
	require.Equal(t, "CONFLICT", ae.Code)
	require.Equal(t, "name", ae.Details["field"])
	require.True(t, IsStatus(err, http.StatusConflict))
	require.True(t, HasCode(err, "CONFLICT"))
	require.False(t, IsStatus(errors.New("x"), http.StatusConflict))

	err = c.Do(ctx, http.MethodGet, "/v1/proxy", nil, nil)
	require.EqualError(t, err, "GET /v1/proxy: HTTP 502: <html> bad gateway </html>")

	var out struct{ X int }
	err = c.Do(ctx, http.MethodGet, "/v1/other", nil, &out)
	require.ErrorContains(t, err, "HTTP 200 with a body that does not decode")

	c.Token = "wrong-token-value"
	err = c.Do(ctx, http.MethodGet, "/v1/other", nil, nil)
	require.ErrorContains(t, err, "HTTP 401 UNAUTHORIZED")
	require.NotContains(t, err.Error(), "wrong-token-value", "the token never shows in errors")

	_, err = testClient("http://127.0.0.1:1").WaitJob(ctx, &Job{JobID: "j", Status: "QUEUED"})
	require.ErrorContains(t, err, "waiting for job j", "a refused connection is an error")
}

func TestDoRefusesAnOversizedBody(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range MaxBody>>20 + 1 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	var raw []byte
	c := testClient(srv.URL)
	// 64 MiB through the race detector: a did-not-hang bound that holds on
	// a machine busy with other work (30 s did not, at a load average of 30).
	c.RequestTimeout = 5 * time.Minute
	err := c.Do(context.Background(), http.MethodGet, "/v1/big", nil, &raw)
	require.ErrorContains(t, err, "response larger than")
	require.Nil(t, raw)
}

// jobServer answers GET /v1/jobs/{id} with the statuses in order, the last
// one forever, and POST /v1/run with the job.
func jobServer(t *testing.T, statuses []string, lastError string) *httptest.Server {
	var calls atomic.Int32
	mux := http.NewServeMux()
	job := func(id string, n int) map[string]any {
		status := statuses[min(n, len(statuses)-1)]
		j := map[string]any{"job_id": id, "type": "COMPILE_PASSPORT", "status": status, "attempts": n + 1, "last_error": nil}
		if IsTerminal(status) && status != StatusSucceeded {
			j["last_error"] = map[string]any{"code": lastError, "message": "rule R12 needs fact pcf.total", "attempt": n + 1, "at": "2026-11-22T10:00:00Z"}
		}
		return j
	}
	mux.HandleFunc("GET /v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("tenant_id") != testTenant || r.URL.Query().Get("wait_ms") == "" {
			writeEnvelope(w, http.StatusBadRequest, "VALIDATION_ERROR", "tenant_id and wait_ms expected")
			return
		}
		j := job(r.PathValue("id"), int(calls.Add(1)))
		code := http.StatusAccepted
		if IsTerminal(j["status"].(string)) {
			code = http.StatusOK
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(j)
	})
	mux.HandleFunc("POST /v1/run", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(map[string]any{"job": job("77777777-7777-4777-8777-777777777777", 0)})
	})
	mux.HandleFunc("POST /v1/run-bare", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(job("77777777-7777-4777-8777-777777777777", 0))
	})
	mux.HandleFunc("POST /v1/no-job", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestWaitJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := &Job{JobID: "77777777-7777-4777-8777-777777777777", Type: "COMPILE_PASSPORT", Status: "QUEUED"}

	srv := jobServer(t, []string{"RUNNING", "RUNNING", "RUNNING", StatusSucceeded}, "")
	job, err := testClient(srv.URL).WaitJob(ctx, start)
	require.NoError(t, err)
	require.Equal(t, StatusSucceeded, job.Status)
	require.Equal(t, 4, job.Attempts)

	for _, status := range []string{StatusFailed, StatusDeadLetter, StatusCancelled} {
		srv := jobServer(t, []string{"RUNNING", "RUNNING", status}, "COMPILE_MISSING_FACT")
		_, err := testClient(srv.URL).WaitJob(ctx, start)
		require.EqualError(t, err, "job 77777777-7777-4777-8777-777777777777 (COMPILE_PASSPORT) ended "+status+
			" after 3 attempt(s): last_error COMPILE_MISSING_FACT: rule R12 needs fact pcf.total")
		var jf *JobFailedError
		require.True(t, errors.As(err, &jf))
		require.Equal(t, status, jf.Job.Status)
		require.Equal(t, &JobError{Code: "COMPILE_MISSING_FACT", Message: "rule R12 needs fact pcf.total", Attempt: 3,
			At: "2026-11-22T10:00:00Z"}, jf.Job.DecodeLastError())
	}

	srv = jobServer(t, []string{"RUNNING"}, "")
	c := testClient(srv.URL)
	c.JobTimeout = 50 * time.Millisecond
	_, err = c.WaitJob(ctx, start)
	require.ErrorContains(t, err, "still RUNNING after 50ms")

	_, err = c.WaitJob(ctx, nil)
	require.ErrorContains(t, err, "no job")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.WaitJob(cancelled, start)
	require.ErrorIs(t, err, context.Canceled)
}

func TestRunJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := jobServer(t, []string{"RUNNING", StatusSucceeded}, "")
	c := testClient(srv.URL)
	job, err := c.RunJob(ctx, "/v1/run", map[string]any{"tenant_id": testTenant})
	require.NoError(t, err)
	require.Equal(t, StatusSucceeded, job.Status)
	job, err = c.RunJob(ctx, "/v1/run-bare", nil)
	require.NoError(t, err)
	require.Equal(t, StatusSucceeded, job.Status)
	_, err = c.RunJob(ctx, "/v1/no-job", nil)
	require.EqualError(t, err, "POST /v1/no-job returned no job")
}

func TestJobLastError(t *testing.T) {
	t.Parallel()
	require.Nil(t, (&Job{}).DecodeLastError())
	require.Nil(t, (&Job{LastError: json.RawMessage("null")}).DecodeLastError())
	require.Equal(t, &JobError{Message: `"boom"`}, (&Job{LastError: json.RawMessage(`"boom"`)}).DecodeLastError())
	err := &JobFailedError{Job: Job{JobID: "j", Type: "T", Status: StatusFailed, Attempts: 1}}
	require.EqualError(t, err, "job j (T) ended FAILED after 1 attempt(s) (no last_error recorded)")
	err.Job.LastError = json.RawMessage(`{"message":"no code"}`)
	require.EqualError(t, err, "job j (T) ended FAILED after 1 attempt(s): last_error ERROR: no code")
}

func TestPoll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := testClient("http://127.0.0.1:1")
	n := 0
	require.NoError(t, c.Poll(ctx, "three calls", func() (bool, string, error) {
		n++
		return n == 3, "", nil
	}))
	require.Equal(t, 3, n)

	boom := errors.New("boom")
	require.ErrorIs(t, c.Poll(ctx, "x", func() (bool, string, error) { return false, "", boom }), boom)

	c.JobTimeout = 20 * time.Millisecond
	err := c.Poll(ctx, "the version to be SIGNED", func() (bool, string, error) { return false, "status COMPILING", nil })
	require.EqualError(t, err, "timed out after 20ms waiting for the version to be SIGNED (last seen: status COMPILING)")
}

func TestPath(t *testing.T) {
	t.Parallel()
	require.Equal(t, "/v1/jobs/a%2Fb/retry", Path("/v1/jobs", "a/b", "retry"))
	require.Equal(t, "http://x", New("http://x///", "t", "u").BaseURL)
}
