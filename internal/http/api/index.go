package api

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"
)

// IndexPath is the API's index: links to what this process serves.
const IndexPath = "/v1"

// apiIndex is the answer of GET /v1: where the reference, the document,
// the health probes and River UI are, as paths on this host.
type apiIndex struct {
	Service     string `json:"service" doc:"What answers here." example:"bpc"`
	Docs        string `json:"docs" doc:"The API reference, for a browser." example:"/v1/docs"`
	OpenAPI     string `json:"openapi" doc:"The OpenAPI document the reference is built from." example:"/v1/openapi.json"`
	HealthLive  string `json:"health_live" doc:"Liveness probe." example:"/v1/health/live"`
	HealthReady string `json:"health_ready" doc:"Readiness probe." example:"/v1/health/ready"`
	Metrics     string `json:"metrics" doc:"Prometheus metrics (the platform token)." example:"/v1/metrics"`
	RiverUI     string `json:"riverui,omitempty" doc:"River UI (HTTP basic auth: any user name, the admin token as password); absent where this process serves no admin routes." example:"/riverui/"`
}

// indexRoutes serves the index at /v1 and redirects / to it: public, like
// health, since it only names paths.
func (s *Server) indexRoutes(rs routes) {
	register(rs, http.MethodGet, IndexPath, "api-index", "Index: links to the reference, the document, health and River UI",
		s.handleIndex, noSecurity, responds[apiIndex](http.StatusOK, "The links"))
	rs.r.Get("/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, IndexPath, http.StatusFound)
	})
}

// noSecurity documents an operation that needs no credentials
// (security: []), overriding the document's default.
func noSecurity(_ huma.Registry, o *huma.Operation) { o.Security = []map[string][]string{} }

type indexOutput struct {
	Body apiIndex
}

func (s *Server) handleIndex(context.Context, *struct{}) (*indexOutput, error) {
	idx := apiIndex{Service: "bpc", Docs: DocsPath, OpenAPI: SpecPath, HealthLive: "/v1/health/live",
		HealthReady: "/v1/health/ready", Metrics: "/v1/metrics"}
	if s.Admin && s.RiverUI != nil {
		idx.RiverUI = "/riverui/"
	}
	return &indexOutput{Body: idx}, nil
}
