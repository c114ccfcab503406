package api

import (
	"context"
	"net/http"
	"time"
)

func (s *Server) handleLive(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

type checkResult struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// handleReady runs every readiness check; any failure is a 503 naming it.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	status, results := http.StatusOK, make([]checkResult, 0, len(s.Ready))
	for _, c := range s.Ready {
		res := checkResult{Name: c.Name, OK: true}
		if err := c.Check(ctx); err != nil {
			res.OK, res.Detail, status = false, err.Error(), http.StatusServiceUnavailable
		}
		results = append(results, res)
	}
	body := map[string]any{"status": "ready", "checks": results}
	if status != http.StatusOK {
		body["status"] = "not ready"
	}
	writeJSON(w, status, body)
}
