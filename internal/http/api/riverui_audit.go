package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/bpc-platform/bpc/passport"
)

// riverUIActions are River UI's job actions that change a job's state.
var riverUIActions = map[string]bool{
	"/riverui/api/jobs/retry":  true,
	"/riverui/api/jobs/cancel": true,
	"/riverui/api/jobs/delete": true,
}

// auditRiverUI writes a job transition line for every job an operator
// retries, cancels or deletes in River UI (River UI itself logs nothing of
// them; the mirror has already put the change in jobs).
func (s *Server) auditRiverUI(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !riverUIActions[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.Config.MaxBodyBytes))
		if err != nil {
			s.writeError(w, r, decodeError(err))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status != http.StatusOK {
			return
		}
		var req struct {
			IDs []json.Number `json:"ids"`
		}
		if json.Unmarshal(body, &req) != nil {
			return
		}
		ids := make([]int64, 0, len(req.IDs))
		for _, id := range req.IDs {
			if n, err := strconv.ParseInt(strings.Trim(id.String(), `"`), 10, 64); err == nil {
				ids = append(ids, n)
			}
		}
		jobs, err := s.Store.JobsByRiverIDs(r.Context(), ids)
		if err != nil {
			s.Logger.WarnContext(r.Context(), "River UI action not audited", slog.String("error", err.Error()))
			return
		}
		source := "river_ui_" + strings.TrimPrefix(r.URL.Path, "/riverui/api/jobs/")
		if source == "river_ui_retry" {
			s.publishRetried(r.Context(), ids)
		}
		for _, job := range jobs {
			s.logTransition(r.Context(), job, source)
		}
	})
}

// publishRetried announces the queues of jobs retried in River UI (see
// publish).
func (s *Server) publishRetried(ctx context.Context, riverJobIDs []int64) {
	if _, ok := s.Inserter.(passport.Publisher); !ok {
		return
	}
	queues, err := s.Store.RiverJobQueues(ctx, riverJobIDs)
	if err != nil {
		s.Logger.WarnContext(ctx, "River UI retry not published to the queue trigger", slog.String("error", err.Error()))
		return
	}
	s.publish(queues...)
}
