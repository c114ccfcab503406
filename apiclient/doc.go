// Package apiclient calls the admin HTTP API of a BPC service (/v1, JSON,
// Authorization: Bearer <token>) as one tenant: requests with JSON bodies,
// the service's error envelope as an *Error, and waiting for jobs — a long
// poll on GET /v1/jobs/{job_id}?wait_ms=… until the job is terminal, or a
// poll of any state the caller can read.
//
// The client is deliberately generic: paths and bodies are the caller's, and
// responses decode into the caller's types, so that it holds no copy of the
// API's shapes besides the two every caller meets (the error envelope and
// the job). A response outside 2xx is an *Error carrying the status, the
// error code, message, correlation id and details; a job that ends other
// than SUCCEEDED is a *JobFailedError carrying the job and its last_error.
// The token never appears in an error.
package apiclient
