package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/bpc-platform/bpc/internal/http/access"
	"github.com/bpc-platform/bpc/internal/redact"
)

type liveOutput struct {
	Body liveResponse
}

func (s *Server) handleLive(context.Context, *struct{}) (*liveOutput, error) {
	return &liveOutput{Body: liveResponse{Status: "ok"}}, nil
}

type readyOutput struct {
	Status int
	Body   readyResponse
}

// liveResponse is the answer of the liveness probe.
type liveResponse struct {
	Status string `json:"status" enum:"ok"`
}

// readyResponse is the answer of the readiness probe.
type readyResponse struct {
	Checks      []checkResult `json:"checks"`
	Environment string        `json:"environment,omitempty" enum:"dev,test,prod" doc:"BPC_ENV, the service's environment; shown only with the platform token (bpc demo sets up its made-up issuer only in dev or test)."`
	Status      string        `json:"status" enum:"ready,degraded,not ready" doc:"degraded: ready (200), but a check that only makes the service slower failed."`
}

type checkResult struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Status string `json:"status,omitempty" enum:"degraded" doc:"degraded: the check failed without making the service unready (the RabbitMQ trigger, unless BPC_HEALTH_REQUIRE_QUEUE)."`
	Detail string `json:"detail,omitempty" doc:"Why the check failed; shown only with the platform token."`
}

// handleReady runs every readiness check; any failure is a 503 naming it,
// except a check that only degrades the service (200, status degraded).
// Health needs no auth, so the failure's text (database host and user,
// schema versions) is logged and shown only to the platform operator:
// credentials, when a caller sends any, went through authenticateIfSent
// and its failed-credential limit, so the detail is no oracle for token
// guesses.
func (s *Server) handleReady(rctx context.Context, _ *struct{}) (*readyOutput, error) {
	ctx, cancel := context.WithTimeout(rctx, 3*time.Second)
	defer cancel()
	p, authenticated := access.FromContext(rctx)
	showDetail := authenticated && p.Platform
	status, degraded, results := http.StatusOK, false, make([]checkResult, 0, len(s.Ready))
	for _, c := range s.Ready {
		res := checkResult{Name: c.Name, OK: true}
		if err := c.Check(ctx); err != nil {
			res.OK = false
			detail := redact.String(err.Error())
			if c.Degrades {
				// Not logged on every probe: the check's owner logs its
				// outage once.
				res.Status, degraded = "degraded", true
			} else {
				status = http.StatusServiceUnavailable
				s.Logger.WarnContext(rctx, "readiness check failed",
					slog.String("correlation_id", correlationID(rctx)),
					slog.String("check", c.Name), slog.String("error", detail))
			}
			if showDetail {
				res.Detail = detail
			}
		}
		results = append(results, res)
	}
	body := readyResponse{Status: "ready", Checks: results}
	if showDetail {
		body.Environment = s.Config.Env
	}
	switch {
	case status != http.StatusOK:
		body.Status = "not ready"
	case degraded:
		body.Status = "degraded"
	}
	return &readyOutput{Status: status, Body: body}, nil
}
