package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// The terminal job statuses of the SSOT jobs table.
const (
	StatusSucceeded  = "SUCCEEDED"
	StatusFailed     = "FAILED"
	StatusCancelled  = "CANCELLED"
	StatusDeadLetter = "DEAD_LETTER"
)

// maxWait is the longest wait_ms GET /v1/jobs/{job_id} accepts.
const maxWait = 30 * time.Second

// IsTerminal reports whether a job in status will not change any more by
// itself (an operator may still retry it).
func IsTerminal(status string) bool {
	switch status {
	case StatusSucceeded, StatusFailed, StatusCancelled, StatusDeadLetter:
		return true
	}
	return false
}

// Job is a job as the API returns it (the members callers use).
type Job struct {
	JobID      string          `json:"job_id"`
	Type       string          `json:"type"`
	Status     string          `json:"status"`
	Attempts   int             `json:"attempts"`
	LastError  json.RawMessage `json:"last_error"`
	RiverJobID int64           `json:"river_job_id"`
	Payload    json.RawMessage `json:"payload"`
}

// JobError is a job's last_error.
type JobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Attempt int    `json:"attempt"`
	At      string `json:"at"`
}

// DecodeLastError returns the job's last_error, nil when there is none; one
// of another shape comes back as its text in Message.
func (j *Job) DecodeLastError() *JobError {
	if len(j.LastError) == 0 || string(j.LastError) == "null" {
		return nil
	}
	var le JobError
	if err := json.Unmarshal(j.LastError, &le); err != nil {
		return &JobError{Message: Snippet(j.LastError)}
	}
	return &le
}

// JobFailedError is a job that ended in a status other than SUCCEEDED.
type JobFailedError struct {
	Job Job
}

// Error names the job, how it ended and its last_error.
func (e *JobFailedError) Error() string {
	msg := fmt.Sprintf("job %s (%s) ended %s after %d attempt(s)", e.Job.JobID, e.Job.Type, e.Job.Status, e.Job.Attempts)
	if le := e.Job.DecodeLastError(); le != nil {
		code := le.Code
		if code == "" {
			code = "ERROR"
		}
		return msg + ": last_error " + code + ": " + le.Message
	}
	return msg + " (no last_error recorded)"
}

// WaitJob long-polls the job until it is terminal, for at most JobTimeout.
// SUCCEEDED returns the job; FAILED, CANCELLED and DEAD_LETTER are a
// *JobFailedError.
func (c *Client) WaitJob(ctx context.Context, job *Job) (*Job, error) {
	if job == nil || job.JobID == "" {
		return nil, errors.New("the response carried no job")
	}
	cur := *job
	deadline := time.Now().Add(c.JobTimeout)
	for !IsTerminal(cur.Status) {
		wait := min(time.Until(deadline), maxWait).Truncate(time.Millisecond)
		if wait <= 0 {
			return nil, fmt.Errorf("job %s (%s) still %s after %s", cur.JobID, cur.Type, cur.Status, c.JobTimeout)
		}
		started := time.Now()
		var next Job
		path := c.TenantPath(Path("/v1/jobs", cur.JobID), "wait_ms", strconv.FormatInt(wait.Milliseconds(), 10))
		if _, err := c.send(ctx, http.MethodGet, path, nil, &next, wait+c.RequestTimeout); err != nil {
			return nil, fmt.Errorf("waiting for job %s (%s): %w", cur.JobID, cur.Type, err)
		}
		if next.JobID == "" || next.Status == "" {
			return nil, fmt.Errorf("waiting for job %s: the response is not a job", cur.JobID)
		}
		cur = next
		// A server that answers at once (no long poll) must not be hammered.
		if !IsTerminal(cur.Status) && time.Since(started) < c.PollInterval {
			if err := sleep(ctx, c.PollInterval); err != nil {
				return nil, err
			}
		}
	}
	if cur.Status != StatusSucceeded {
		return nil, &JobFailedError{Job: cur}
	}
	return &cur, nil
}

// RunJob posts body to path, which answers with {"job": {...}} (or the bare
// job), and waits for that job as WaitJob does.
func (c *Client) RunJob(ctx context.Context, path string, body any) (*Job, error) {
	var r struct {
		Job *Job `json:"job"`
		bareJob
	}
	if err := c.Do(ctx, http.MethodPost, path, body, &r); err != nil {
		return nil, err
	}
	job := r.Job
	if job == nil && r.JobID != "" {
		job = (*Job)(&r.bareJob)
	}
	if job == nil {
		return nil, fmt.Errorf("POST %s returned no job", path)
	}
	return c.WaitJob(ctx, job)
}

// bareJob is a Job whose members decode at the top level of a response.
type bareJob Job

// Poll calls check every PollInterval until it reports done, fails, or
// JobTimeout passes; check's state describes where things stand, for the
// timeout's error.
func (c *Client) Poll(ctx context.Context, what string, check func() (done bool, state string, err error)) error {
	deadline := time.Now().Add(c.JobTimeout)
	for {
		done, state, err := check()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s (last seen: %s)", c.JobTimeout, what, state)
		}
		if err := sleep(ctx, c.PollInterval); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
