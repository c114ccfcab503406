// Package api is the admin HTTP API (chi): jobs, tenants, webhooks and
// events under /v1 behind a bearer token, health, Prometheus metrics, and
// River UI at /riverui/ behind HTTP Basic with the same token.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/webhook/destination"
)

// Config is what the API needs to know of the service configuration.
type Config struct {
	// Env is dev, test or prod; prod requires https webhook URLs.
	Env string
	// WebhookDestinations is the policy webhook URLs are checked against at
	// registration (BPC_WEBHOOK_ALLOW_PRIVATE); nil refuses private
	// destinations.
	WebhookDestinations *destination.Policy
	// AdminToken guards every route but health.
	AdminToken string
	// MaxBodyBytes limits request bodies.
	MaxBodyBytes int64
	// MaxQueueDepth (BPC_QUEUE_MAX_DEPTH), when positive, makes enqueues
	// into a queue with more available jobs than this answer 429.
	MaxQueueDepth int
	// Kinds are the job types (the workers' registry).
	Kinds []jobargs.Kind
	// CompileLimits bound the artifacts of a replayed compile (zero members
	// are the SPEC defaults); set from BPC_PAYLOAD/PROOF/RECEIPT_MAX_BYTES.
	// Its Rules member (BPC_RULES_MAX_NODES, BPC_RULES_MAX_CASES) also bounds
	// the sources of a new rule package version.
	CompileLimits compiler.Limits
}

// ReadyCheck reports an unmet readiness condition by returning an error.
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// Server holds the API's dependencies.
type Server struct {
	Config  Config
	Store   *store.Queries
	River   *river.Client[pgx.Tx]
	Logger  *slog.Logger
	Metrics *Metrics
	// Gatherer serves /v1/metrics.
	Gatherer prometheus.Gatherer
	// RiverUI is River UI's handler, mounted at /riverui/ when set.
	RiverUI http.Handler
	// Admin serves the /v1 admin routes and River UI; without it only
	// health and metrics are served (the worker role).
	Admin bool
	// Ready are the readiness checks of /v1/health/ready.
	Ready []ReadyCheck
	// depth caches queue depths for BPC_QUEUE_MAX_DEPTH.
	depth depthGate
	// pollInterval is the waitMs long-poll's first delay (tests shorten it).
	pollInterval time.Duration
}

// Handler returns the router with every route of the service.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(secureHeaders, s.recoverer, s.correlate, s.observe, s.refuseCrossOrigin, getHead)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errNotFoundRoute(r))
	})
	r.MethodNotAllowed(s.methodNotAllowed)

	r.Get("/v1/health/live", s.handleLive)
	r.Get("/v1/health/ready", s.handleReady)

	r.Group(func(r chi.Router) {
		r.Use(s.requireBearer, s.checkRequestText, s.limitBody)

		r.Get("/v1/metrics", promhttp.HandlerFor(s.Gatherer, promhttp.HandlerOpts{}).ServeHTTP)
		if !s.Admin {
			return
		}

		r.Post("/v1/tenants", s.handleCreateTenant)
		r.Get("/v1/tenants", s.handleListTenants)

		r.Post("/v1/jobs", s.handleEnqueue)
		r.Post("/v1/jobs:batch", s.handleEnqueueBatch)
		r.Get("/v1/jobs", s.handleListJobs)
		r.Get("/v1/jobs/{job_id}", s.handleGetJob)
		r.Post("/v1/jobs/{job_id}/retry", s.handleRetryJob)
		r.Post("/v1/jobs/{job_id}/cancel", s.handleCancelJob)

		r.Post("/v1/events", s.handleAppendEvent)

		r.Post("/v1/webhook-endpoints", s.handleCreateEndpoint)
		r.Get("/v1/webhook-endpoints", s.handleListEndpoints)
		r.Get("/v1/webhook-endpoints/{id}", s.handleGetEndpoint)
		r.Patch("/v1/webhook-endpoints/{id}", s.handleUpdateEndpoint)
		r.Delete("/v1/webhook-endpoints/{id}", s.handleDeleteEndpoint)
		r.Post("/v1/webhook-endpoints/{id}/ping", s.handlePingEndpoint)
		r.Post("/v1/webhook-subscriptions", s.handleCreateSubscription)
		r.Get("/v1/webhook-subscriptions", s.handleListSubscriptions)
		r.Delete("/v1/webhook-subscriptions/{id}", s.handleDeleteSubscription)
		r.Get("/v1/webhook-deliveries/{id}", s.handleGetDelivery)

		s.domainRoutes(r)
	})

	if s.Admin && s.RiverUI != nil {
		ui := s.requireBasic(s.checkRequestText(s.limitBody(s.auditRiverUI(s.RiverUI))))
		r.Handle("/riverui", http.RedirectHandler("/riverui/", http.StatusMovedPermanently))
		r.Handle("/riverui/*", ui)
	}
	return r
}

// domainRoutes are the passport domain endpoints (domain_*.go).
func (s *Server) domainRoutes(r chi.Router) {
	r.Post("/v1/documents", s.handleCreateDocument)
	r.Get("/v1/documents", s.handleListDocuments)
	r.Get("/v1/documents/{id}", s.handleGetDocument)
	r.Post("/v1/documents/{id}/versions", s.handleUploadDocumentVersion)
	r.Get("/v1/document-versions/{id}", s.handleGetDocumentVersion)
	r.Get("/v1/facts", s.handleListFacts)

	r.Post("/v1/snapshots", s.handleCreateSnapshot)
	r.Get("/v1/snapshots/{id}", s.handleGetSnapshot)
	r.Post("/v1/snapshots/{id}/items", s.handleAddSnapshotItems)
	r.Get("/v1/snapshots/{id}/items", s.handleListSnapshotItems)
	r.Post("/v1/snapshots/{id}/build", s.handleBuildSnapshot)
	r.Post("/v1/snapshots/{id}/seal", s.handleSealSnapshot)

	r.Post("/v1/rule-packages", s.handleCreateRulePackage)
	r.Get("/v1/rule-packages", s.handleListRulePackages)
	r.Get("/v1/rule-packages/{id}", s.handleGetRulePackage)
	r.Post("/v1/rule-packages/{id}/versions", s.handleCreateRuleVersion)
	r.Get("/v1/rule-package-versions/{id}", s.handleGetRuleVersion)
	r.Post("/v1/rule-package-versions/{id}/test", s.handleRunRuleTests)
	r.Get("/v1/rule-package-versions/{id}/test-runs", s.handleListRuleTestsRuns)
	r.Post("/v1/rule-package-versions/{id}/publish", s.handlePublishRuleVersion)

	r.Post("/v1/battery-products", s.handleCreateProduct)
	r.Get("/v1/battery-products", s.handleListProducts)
	r.Get("/v1/battery-products/{id}", s.handleGetProduct)

	r.Post("/v1/passports", s.handleCreatePassport)
	r.Get("/v1/passports/{id}", s.handleGetPassport)
	r.Post("/v1/passports/{id}/compile", s.handleCompilePassport)
	r.Get("/v1/passport-versions/{id}", s.handleGetPassportVersion)
	r.Get("/v1/passport-versions/{id}/payload", s.serveArtifact("application/json", payloadArtifact))
	r.Get("/v1/passport-versions/{id}/proof", s.serveArtifact("application/json", proofArtifact))
	r.Get("/v1/passport-versions/{id}/receipt", s.serveArtifact("application/json", receiptArtifact))
	r.Get("/v1/passport-versions/{id}/qr.png", s.serveArtifact("image/png", qrArtifact))
	r.Post("/v1/passport-versions/{id}/activate", s.handleActivatePassportVersion)
	r.Post("/v1/passport-versions/{id}/export", s.handleExportPassportVersion)
	r.Get("/v1/passport-versions/{id}/exports", s.handleListPassportExports)
	r.Get("/v1/passport-versions/{id}/export-file", s.handleGetExportFile)
	r.Post("/v1/passport-versions/{id}/replay", s.handleReplayPassportVersion)

	r.Get("/v1/signing-keys", s.handleListSigningKeys)
}
