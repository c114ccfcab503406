// Package api is the admin HTTP API (chi): jobs, tenants, webhooks and
// events under /v1 behind a bearer token, health, Prometheus metrics, and
// River UI at /riverui/ behind HTTP Basic with the same token. Every /v1
// route is described by the OpenAPI 3.1 document it serves at
// /v1/openapi.json (and as a page at /v1/docs), built from the Go types the
// route declares.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"reflect"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/trace"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/internal/http/access"
	"github.com/bpc-platform/bpc/internal/http/public"
	"github.com/bpc-platform/bpc/internal/webhook/destination"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
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
	// Quotas are the tenants' default quotas (BPC_TENANT_*, SPEC §15),
	// which the platform overrides per tenant; zero is
	// passport.DefaultQuotas.
	Quotas passport.Quotas
}

// ReadyCheck reports an unmet readiness condition by returning an error.
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
	// Degrades makes a failure a degraded service, still ready (200): the
	// service works without it, only less well (the RabbitMQ trigger).
	Degrades bool
}

// Server holds the API's dependencies.
type Server struct {
	Config Config
	Store  *store.Queries
	// Reads are the read-routed Queries (store.ReadRouter) of the public
	// routes and the operators' list routes, which a replica a few seconds
	// behind may answer; nil: Store. Every other read stays on Store.
	Reads *store.Queries
	River *river.Client[pgx.Tx]
	// Inserter inserts the jobs of domain operations and enqueues; nil is
	// River (passport.Publishing wraps River with the RabbitMQ trigger).
	Inserter passport.Inserter
	Logger   *slog.Logger
	Metrics  *Metrics
	// Gatherer serves /v1/metrics.
	Gatherer prometheus.Gatherer
	// RiverUI is River UI's handler, mounted at /riverui/ when set.
	RiverUI http.Handler
	// Admin serves the /v1 admin routes and River UI; without it only
	// health and metrics are served (the worker role).
	Admin bool
	// Keys authenticate tenant API keys; nil accepts the platform token only.
	Keys *access.Keyring
	// SigningKeys are the tenants' signing keys (rotation makes new ones;
	// nil: rotation is SIGNING_KEY_MISSING).
	SigningKeys *passport.Keyring
	// Limits is the per-key and per-address rate limit (nil: none).
	Limits *access.Limiter
	// TenantLimits is the request budget each tenant's keys share, on top
	// of Limits (nil: none).
	TenantLimits *access.TenantLimiter
	// Access counts refused credentials, key events and rate-limited
	// requests (nil: not counted).
	Access *AccessMetrics
	// Ready are the readiness checks of /v1/health/ready.
	Ready []ReadyCheck
	// Tracer, when set, makes each request a server span (tracing off: nil).
	Tracer trace.Tracer
	// PublicBaseURL is the base of the service's QR links (App.PublicBaseURL):
	// a link scanned into /public/v1/verify must lead there or to its
	// version's stored base. Nil: only the stored base.
	PublicBaseURL func() string
	// PublicAnswers caches the public routes' answers (nil: none); the
	// routes that change what they show drop them at once (publicChanged).
	PublicAnswers *public.Answers
	// PublicCDNMaxAge is how long a CDN may hold a public answer
	// (public.CacheControl).
	PublicCDNMaxAge time.Duration
	// depth caches queue depths for BPC_QUEUE_MAX_DEPTH.
	depth depthGate
	// queued admits enqueues within each tenant's queued_jobs quota.
	queued passport.QueueGate
	// pollInterval is the waitMs long-poll's first delay (tests shorten it).
	pollInterval time.Duration
}

// Handler returns the router with every route of the service. Each /v1
// route is declared with its parameters, request body and response types,
// from which the OpenAPI document at /v1/openapi.json is built (openapi.go).
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	// correlate runs before recoverer so a panic's envelope carries the
	// correlation id its X-Correlation-Id header shows.
	r.Use(secureHeaders, s.correlate, s.recoverer, s.observe, s.refuseCrossOrigin, getHead)
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errNotFoundRoute(r))
	})
	r.MethodNotAllowed(s.methodNotAllowed)

	doc := newOpenAPI()
	public := routes{r: r, api: s.newAPI(r, doc), doc: doc, public: true}
	register(public, http.MethodGet, "/v1/health/live", "health-live", "Liveness: the process serves HTTP", s.handleLive,
		responds[liveResponse](http.StatusOK, "Alive"))
	// Credentials are optional on ready, but checked when sent.
	probe := r.With(s.authenticateIfSent)
	ready := routes{r: probe, api: s.newAPI(probe, doc), doc: doc, public: true}
	register(ready, http.MethodGet, "/v1/health/ready", "health-ready", "Readiness: every readiness check passes", s.handleReady,
		describe("Each check's failure detail is shown only with the platform token. Credentials are optional; "+
			"sent ones are checked as on /v1: a wrong token is 401, and 429 once the address's failed credentials are over their rate."),
		responds[readyResponse](http.StatusOK, "Ready"),
		responds[readyResponse](http.StatusServiceUnavailable, "A check failed"))
	s.indexRoutes(public)

	// Public, like health: the document holds no data.
	sp := &spec{doc: doc}
	r.Get(SpecPath, sp.serveJSON)
	s.mountDocs(r, sp)

	r.Group(func(g chi.Router) {
		g.Use(s.authenticate, s.allowMethod, s.checkRequestText, canonicalQuery, s.limitBody)
		rs := routes{r: g, api: s.newAPI(g, doc), doc: doc}
		rs.handle(http.MethodGet, "/v1/metrics", "metrics", "Prometheus metrics (text exposition format)",
			s.platformOnly("metrics", promhttp.HandlerFor(s.Gatherer, promhttp.HandlerOpts{}).ServeHTTP),
			describe("The platform token only."),
			raw("Metrics", "text/plain"))
		if !s.Admin {
			return
		}
		s.adminRoutes(rs)
		s.domainRoutes(rs)
	})

	if s.Admin {
		s.publicRoutes(r, doc)
	}

	if s.Admin && s.RiverUI != nil {
		ui := s.requireBasic(s.checkRequestText(s.limitBody(s.auditRiverUI(s.RiverUI))))
		r.Handle("/riverui", http.RedirectHandler("/riverui/", http.StatusMovedPermanently))
		r.Handle("/riverui/*", ui)
	}
	return r
}

// Parameters of the routes: Huma reads and validates them from these types
// and tags, which the document is generated from.
type (
	tenantParam struct {
		TenantID ID `query:"tenant_id" doc:"The tenant the resource belongs to: required with the platform token; a tenant API key's own tenant when absent (another tenant's is 403)."`
	}
	idParams struct {
		ID       ID `path:"id"`
		TenantID ID `query:"tenant_id" doc:"The tenant of the resource: optional; a tenant API key's own tenant when absent (another tenant's is 403), the resource's own for the platform token."`
	}
	// bodyInput is a JSON body B and no parameters.
	bodyInput[B any] struct {
		Body B
	}
	// idBody is an {id} and a JSON body B.
	idBody[B any] struct {
		ID   ID `path:"id"`
		Body B
	}
	// idParamsBody is an {id}, the tenant_id parameter and a JSON body B.
	idParamsBody[B any] struct {
		ID       ID `path:"id"`
		TenantID ID `query:"tenant_id" doc:"The tenant of the resource: optional; a tenant API key's own tenant when absent (another tenant's is 403), the resource's own for the platform token."`
		Body     B
	}
	jobParams struct {
		JobID    ID `path:"job_id"`
		TenantID ID `query:"tenant_id" doc:"The tenant of the resource: optional; a tenant API key's own tenant when absent (another tenant's is 403), the resource's own for the platform token."`
	}
	getJobParams struct {
		JobID    ID          `path:"job_id"`
		TenantID ID          `query:"tenant_id" doc:"The tenant of the resource: optional; a tenant API key's own tenant when absent (another tenant's is 403), the resource's own for the platform token."`
		WaitMs   optionalInt `query:"wait_ms" minimum:"0" maximum:"30000" doc:"Long-poll up to this many ms for a terminal status; 202 with Retry-After when the wait ends first."`
		// WaitMsAlias is wait_ms under its former camelCase name, still
		// accepted (queryAliases) but not documented: ogen refuses two
		// parameters whose Go names clash (wait_ms, waitMs).
		WaitMsAlias optionalInt `query:"waitMs" minimum:"0" maximum:"30000" deprecated:"true" hidden:"true" doc:"Deprecated alias of wait_ms."`
	}
	listJobsParams struct {
		TenantID      ID        `query:"tenant_id" doc:"Only this tenant's jobs. The platform token lists every tenant's without it; a tenant API key always lists its own tenant's."`
		Type          string    `query:"type" doc:"Only jobs of this type."`
		Status        string    `query:"status" enum:"QUEUED,RUNNING,SUCCEEDED,FAILED,CANCELLED,DEAD_LETTER"`
		CreatedAfter  time.Time `query:"created_after" doc:"Jobs created at or after this time (RFC 3339)."`
		CreatedBefore time.Time `query:"created_before" doc:"Jobs created before this time (RFC 3339)."`
		Cursor        string    `query:"cursor" maxLength:"200" doc:"next_cursor of the previous page."`
		Limit         int       `query:"limit" minimum:"1" maximum:"500" default:"50" doc:"Page size, default 50."`
	}
	listSubscriptionsParams struct {
		TenantID          ID `query:"tenant_id" doc:"The tenant the resource belongs to: required with the platform token; a tenant API key's own tenant when absent (another tenant's is 403)."`
		WebhookEndpointID ID `query:"webhook_endpoint_id" doc:"Only this endpoint's subscriptions."`
	}
	listFactsParams struct {
		TenantID          ID     `query:"tenant_id" doc:"The tenant the resource belongs to: required with the platform token; a tenant API key's own tenant when absent (another tenant's is 403)."`
		DocumentVersionID ID     `query:"document_version_id" doc:"Only this document version's facts."`
		FactType          string `query:"fact_type" maxLength:"100"`
		Limit             int    `query:"limit" minimum:"1" maximum:"1000" default:"1000" doc:"At most this many facts, default 1000."`
	}
	ruleVersionParams struct {
		ID       ID     `path:"id"`
		TenantID ID     `query:"tenant_id" doc:"The tenant of the resource: optional; a tenant API key's own tenant when absent (another tenant's is 403), the resource's own for the platform token."`
		Include  string `query:"include" enum:"sources" doc:"sources: include dsl_source and tests_source."`
	}
	exportFileParams struct {
		ID       ID     `path:"id"`
		TenantID ID     `query:"tenant_id" doc:"The tenant of the resource: optional; a tenant API key's own tenant when absent (another tenant's is 403), the resource's own for the platform token."`
		Format   string `query:"format" enum:"JSON,PDF,json,pdf" doc:"Export format, default JSON: JSON is served as application/json, PDF as application/pdf."`
	}
)

// optionalInt is an integer parameter whose absence means something else
// than any value (Huma parameters cannot be pointers).
type optionalInt struct {
	Value int
	Set   bool
}

// Receiver is where Huma parses the parameter (huma.ParamWrapper).
func (o *optionalInt) Receiver() reflect.Value { return reflect.ValueOf(o).Elem().Field(0) }

// OnParamSet records whether the request gave the parameter (huma.ParamReactor).
func (o *optionalInt) OnParamSet(isSet bool, _ any) { o.Set = isSet }

// Schema documents the parameter as an integer; the field's tags add its bounds.
func (optionalInt) Schema(huma.Registry) *huma.Schema { return &huma.Schema{Type: huma.TypeInteger} }

// out is the output of a typed operation answering a T: the status (the
// operation's documented default when zero) and the body.
type out[T any] struct {
	Status int
	Body   T
}

// reply returns a T with status.
func reply[T any](status int, body T) (*out[T], error) {
	return &out[T]{Status: status, Body: body}, nil
}

// ok answers v with 200, or the error: return ok(s.Store.GetSnapshot(…)).
func ok[T any](v T, err error) (*out[T], error) { return replyOr(http.StatusOK, v, err) }

// created answers v with 201, or the error.
func created[T any](v T, err error) (*out[T], error) { return replyOr(http.StatusCreated, v, err) }

// replyOr answers v with status, or err when there is one.
func replyOr[T any](status int, v T, err error) (*out[T], error) {
	if err != nil {
		return nil, err
	}
	return reply(status, v)
}

// items is the {"items": [...]} shape of the list endpoints.
type items[T any] struct {
	Items []T `json:"items"`
}

// okItems answers all as {"items": all} with 200, or the error.
func okItems[T any](all []T, err error) (*out[items[T]], error) { return ok(items[T]{Items: all}, err) }

// adminRoutes are the job, tenant, event and webhook endpoints.
func (s *Server) adminRoutes(rs routes) {
	register(rs, http.MethodPost, "/v1/tenants", "create-tenant", "Create a tenant", s.handleCreateTenant,
		describe("The platform token only."), platformOp("creating tenants"),
		jsonBody[createTenantRequest],
		responds[bpctype.Tenant](http.StatusCreated, "Created"))
	register(rs, http.MethodGet, "/v1/tenants", "list-tenants", "List tenants", s.handleListTenants,
		describe("Every tenant for the platform token; a tenant API key sees its own tenant only."),
		responds[items[bpctype.Tenant]](http.StatusOK, "Tenants"))
	register(rs, http.MethodPatch, "/v1/tenants/{id}", "update-tenant-quotas", "Override a tenant's quotas", s.handleUpdateTenantQuotas,
		describe("The platform token only."), platformOp("changing a tenant's quotas"),
		jsonBody[updateTenantQuotasRequest],
		responds[tenantQuotasResponse](http.StatusOK, "The tenant's effective quotas"))
	register(rs, http.MethodGet, "/v1/tenants/{id}/usage", "get-tenant-usage", "A tenant's quotas and what it uses of them", s.handleGetTenantUsage,
		responds[tenantUsageResponse](http.StatusOK, "Quotas and usage"))
	register(rs, http.MethodPut, "/v1/tenants/{id}/issuer", "put-tenant-issuer", "Set a tenant's issuer profile", s.handlePutIssuer,
		jsonBody[passport.IssuerInput],
		responds[bpctype.IssuerProfile](http.StatusOK, "The profile as stored"))
	register(rs, http.MethodGet, "/v1/tenants/{id}/issuer", "get-tenant-issuer", "Get a tenant's issuer profile", s.handleGetIssuer,
		responds[bpctype.IssuerProfile](http.StatusOK, "The profile"))
	register(rs, http.MethodPost, "/v1/tenants/{id}/issuer/verify", "verify-tenant-issuer", "Record that the platform verified the issuer's identity", s.handleVerifyIssuer,
		describe("The platform token only."),
		platformOp(verifyIssuerWhat), jsonBody[passport.IssuerInput],
		responds[bpctype.IssuerProfile](http.StatusOK, "The profile, verified"))

	register(rs, http.MethodPost, "/v1/api-keys", "create-api-key", "Create a tenant API key; its token is shown once", s.handleCreateKey,
		describe("The platform token, or a tenant admin key for its own tenant. The token (bpc_<prefix>_<secret>) is in this answer only; the service keeps its SHA-256."),
		jsonBody[createKeyRequest],
		responds[passport.CreatedKey](http.StatusCreated, "Created, with its token"))
	register(rs, http.MethodGet, "/v1/api-keys", "list-api-keys", "List a tenant's API keys (without tokens)", s.handleListKeys,
		describe("The platform token, or a tenant admin key for its own tenant. Revoked and expired keys are listed too."),
		responds[items[bpctype.APIKey]](http.StatusOK, "Keys, newest first"))
	register(rs, http.MethodDelete, "/v1/api-keys/{id}", "revoke-api-key", "Revoke an API key", s.handleRevokeKey,
		describe("Takes effect at once on this process and within a second on every other. Revoking a revoked key is a no-op."),
		noContent("Revoked"))

	enqueue := kindSchemas(rs.doc.Components.Schemas, s.Config.Kinds)
	register(rs, http.MethodPost, "/v1/jobs", "enqueue-job", "Enqueue a job", s.handleEnqueue,
		describe(kindsDescription(s.Config.Kinds)),
		bodySchema(enqueue),
		responds[bpctype.Job](http.StatusCreated, "Created"),
		responds[bpctype.Job](http.StatusOK, "Existing job (same idempotency key and request)"))
	register(rs, http.MethodPost, "/v1/jobs:batch", "enqueue-jobs-batch", "Enqueue up to 1000 jobs in one transaction", s.handleEnqueueBatch,
		describe(kindsDescription(s.Config.Kinds)),
		bodySchema(&huma.Schema{Type: huma.TypeObject, Required: []string{"jobs"}, AdditionalProperties: false,
			Properties: map[string]*huma.Schema{"jobs": {Type: huma.TypeArray, Items: enqueue, MinItems: ptr(1), MaxItems: ptr(maxBatchJobs)}}}),
		responds[items[batchItem]](http.StatusCreated, "At least one job created"),
		responds[items[batchItem]](http.StatusOK, "Every job already existed"))
	register(rs, http.MethodGet, "/v1/jobs", "list-jobs", "List a tenant's jobs, newest first", s.handleListJobs,
		responds[store.JobPage](http.StatusOK, "A page of jobs"))
	enumParam(rs.doc, "/v1/jobs", "type", jobargs.Names(s.Config.Kinds))
	register(rs, http.MethodGet, "/v1/jobs/{job_id}", "get-job", "Get a job, optionally long-polling for its end", s.handleGetJob,
		responds[bpctype.Job](http.StatusOK, "The job (terminal, or no waitMs)"),
		responds[bpctype.Job](http.StatusAccepted, "waitMs elapsed before the job finished", "Retry-After"))
	register(rs, http.MethodPost, "/v1/jobs/{job_id}/retry", "retry-job", "Retry a job that did not succeed", s.handleRetryJob,
		responds[bpctype.Job](http.StatusOK, "The job, queued again"))
	register(rs, http.MethodPost, "/v1/jobs/{job_id}/cancel", "cancel-job", "Cancel a job that has not finished", s.handleCancelJob,
		responds[bpctype.Job](http.StatusOK, "The job"))

	register(rs, http.MethodPost, "/v1/events", "append-event", "Append a custom audit event", s.handleAppendEvent,
		jsonBody[appendEventRequest],
		responds[appendEventResponse](http.StatusCreated, "Appended; subscribed endpoints got a delivery each"))

	register(rs, http.MethodPost, "/v1/webhook-endpoints", "create-webhook-endpoint", "Register a webhook endpoint", s.handleCreateEndpoint,
		jsonBody[createEndpointRequest],
		responds[bpctype.WebhookEndpoint](http.StatusCreated, "Created"))
	register(rs, http.MethodGet, "/v1/webhook-endpoints", "list-webhook-endpoints", "List a tenant's webhook endpoints", s.handleListEndpoints,
		responds[items[bpctype.WebhookEndpoint]](http.StatusOK, "Endpoints"))
	register(rs, http.MethodGet, "/v1/webhook-endpoints/{id}", "get-webhook-endpoint", "Get a webhook endpoint with its circuit breaker", s.handleGetEndpoint,
		responds[endpointResponse](http.StatusOK, "The endpoint"))
	register(rs, http.MethodPatch, "/v1/webhook-endpoints/{id}", "update-webhook-endpoint", "Change a webhook endpoint's URL or activity", s.handleUpdateEndpoint,
		jsonBody[updateEndpointRequest],
		responds[bpctype.WebhookEndpoint](http.StatusOK, "The endpoint"))
	register(rs, http.MethodDelete, "/v1/webhook-endpoints/{id}", "delete-webhook-endpoint", "Delete a webhook endpoint", s.handleDeleteEndpoint,
		noContent("Deleted"))
	register(rs, http.MethodPost, "/v1/webhook-endpoints/{id}/ping", "ping-webhook-endpoint", "Send a webhook.ping event to the endpoint", s.handlePingEndpoint,
		responds[pingResponse](http.StatusAccepted, "Ping queued"))
	register(rs, http.MethodPost, "/v1/webhook-subscriptions", "create-webhook-subscription", "Subscribe an endpoint to an event type", s.handleCreateSubscription,
		jsonBody[createSubscriptionRequest],
		responds[bpctype.WebhookSubscription](http.StatusCreated, "Created"))
	register(rs, http.MethodGet, "/v1/webhook-subscriptions", "list-webhook-subscriptions", "List a tenant's webhook subscriptions", s.handleListSubscriptions,
		responds[items[bpctype.WebhookSubscription]](http.StatusOK, "Subscriptions"))
	register(rs, http.MethodDelete, "/v1/webhook-subscriptions/{id}", "delete-webhook-subscription", "Delete a webhook subscription", s.handleDeleteSubscription,
		noContent("Deleted"))
	register(rs, http.MethodGet, "/v1/webhook-deliveries/{id}", "get-webhook-delivery", "Get a webhook delivery", s.handleGetDelivery,
		responds[webhookDelivery](http.StatusOK, "The delivery"))
}

// domainRoutes are the passport domain endpoints (domain_*.go).
func (s *Server) domainRoutes(rs routes) {
	register(rs, http.MethodPost, "/v1/documents", "create-document", "Create a document", s.handleCreateDocument,
		jsonBody[createDocumentRequest],
		responds[bpctype.Document](http.StatusCreated, "Created"))
	register(rs, http.MethodGet, "/v1/documents", "list-documents", "List a tenant's documents", s.handleListDocuments,
		responds[items[bpctype.Document]](http.StatusOK, "Documents"))
	register(rs, http.MethodGet, "/v1/documents/{id}", "get-document", "Get a document with its versions", s.handleGetDocument,
		responds[documentWithVersions](http.StatusOK, "The document"))
	register(rs, http.MethodPost, "/v1/documents/{id}/versions", "upload-document-version", "Upload a document version and enqueue its PARSE_FACTS", s.handleUploadDocumentVersion,
		jsonBody[uploadVersionRequest],
		responds[uploadVersionResponse](http.StatusCreated, "Stored; job is its PARSE_FACTS"),
		responds[uploadVersionResponse](http.StatusOK, "The same bytes were uploaded before; job is null"))
	register(rs, http.MethodGet, "/v1/document-versions/{id}", "get-document-version", "Get a document version", s.handleGetDocumentVersion,
		responds[bpctype.DocumentVersion](http.StatusOK, "The version"))
	register(rs, http.MethodGet, "/v1/facts", "list-facts", "List a tenant's facts", s.handleListFacts,
		responds[items[bpctype.Fact]](http.StatusOK, "Facts"))

	register(rs, http.MethodPost, "/v1/snapshots", "create-snapshot", "Create a BUILDING snapshot", s.handleCreateSnapshot,
		jsonBody[tenantRequest],
		responds[bpctype.Snapshot](http.StatusCreated, "Created"))
	register(rs, http.MethodGet, "/v1/snapshots/{id}", "get-snapshot", "Get a snapshot", s.handleGetSnapshot,
		responds[bpctype.Snapshot](http.StatusOK, "The snapshot"))
	register(rs, http.MethodPost, "/v1/snapshots/{id}/items", "add-snapshot-items", "Add facts to a BUILDING snapshot", s.handleAddSnapshotItems,
		jsonBody[addItemsRequest],
		responds[addItemsResponse](http.StatusOK, "The snapshot and how many facts were added"))
	register(rs, http.MethodGet, "/v1/snapshots/{id}/items", "list-snapshot-items", "List a snapshot's items", s.handleListSnapshotItems,
		responds[items[bpctype.SnapshotItem]](http.StatusOK, "Items"))
	register(rs, http.MethodPost, "/v1/snapshots/{id}/build", "build-snapshot", "Enqueue BUILD_SNAPSHOT", s.handleBuildSnapshot,
		jsonBody[tenantRequest],
		responds[jobResponse](http.StatusAccepted, "Job enqueued"))
	register(rs, http.MethodPost, "/v1/snapshots/{id}/seal", "seal-snapshot", "Seal a READY snapshot", s.handleSealSnapshot,
		jsonBody[tenantRequest],
		responds[bpctype.Snapshot](http.StatusOK, "Sealed"))

	register(rs, http.MethodPost, "/v1/rule-packages", "create-rule-package", "Create a rule package", s.handleCreateRulePackage,
		jsonBody[createRulePackageRequest],
		responds[bpctype.RulePackage](http.StatusCreated, "Created"))
	register(rs, http.MethodGet, "/v1/rule-packages", "list-rule-packages", "List a tenant's rule packages", s.handleListRulePackages,
		responds[items[bpctype.RulePackage]](http.StatusOK, "Rule packages"))
	register(rs, http.MethodGet, "/v1/rule-packages/{id}", "get-rule-package", "Get a rule package with its versions", s.handleGetRulePackage,
		responds[rulePackageWithVersions](http.StatusOK, "The rule package"))
	register(rs, http.MethodPost, "/v1/rule-packages/{id}/versions", "create-rule-package-version", "Check and store the package's next DRAFT version", s.handleCreateRuleVersion,
		jsonBody[createRuleVersionRequest],
		responds[bpctype.RulePackageVersion](http.StatusCreated, "Created"))
	register(rs, http.MethodGet, "/v1/rule-package-versions/{id}", "get-rule-package-version", "Get a rule package version", s.handleGetRuleVersion,
		responds[bpctype.RulePackageVersion](http.StatusOK, "The version"))
	register(rs, http.MethodPost, "/v1/rule-package-versions/{id}/test", "run-rule-tests", "Enqueue RUN_RULE_TESTS", s.handleRunRuleTests,
		jsonBody[runRuleTestsRequest],
		responds[jobResponse](http.StatusAccepted, "Job enqueued"))
	register(rs, http.MethodGet, "/v1/rule-package-versions/{id}/test-runs", "list-rule-test-runs", "List a version's test runs", s.handleListRuleTestsRuns,
		responds[items[bpctype.RuleTestsRun]](http.StatusOK, "Test runs"))
	register(rs, http.MethodPost, "/v1/rule-package-versions/{id}/publish", "publish-rule-package-version", "Publish a version whose tests passed", s.handlePublishRuleVersion,
		jsonBody[tenantRequest],
		responds[bpctype.RulePackageVersion](http.StatusOK, "Published"))

	register(rs, http.MethodPost, "/v1/battery-products", "create-battery-product", "Create a battery product", s.handleCreateProduct,
		jsonBody[createProductRequest],
		responds[bpctype.BatteryProduct](http.StatusCreated, "Created"))
	register(rs, http.MethodGet, "/v1/battery-products", "list-battery-products", "List a tenant's battery products", s.handleListProducts,
		responds[items[bpctype.BatteryProduct]](http.StatusOK, "Products"))
	register(rs, http.MethodGet, "/v1/battery-products/{id}", "get-battery-product", "Get a battery product", s.handleGetProduct,
		responds[bpctype.BatteryProduct](http.StatusOK, "The product"))

	register(rs, http.MethodPost, "/v1/passports", "create-passport", "Create a passport for a product", s.handleCreatePassport,
		jsonBody[createPassportRequest],
		responds[bpctype.Passport](http.StatusCreated, "Created"))
	register(rs, http.MethodGet, "/v1/passports/{id}", "get-passport", "Get a passport with its versions", s.handleGetPassport,
		responds[passportWithVersions](http.StatusOK, "The passport"))
	register(rs, http.MethodPost, "/v1/passports/{id}/compile", "compile-passport", "Enqueue COMPILE_PASSPORT", s.handleCompilePassport,
		jsonBody[compileRequest],
		responds[jobResponse](http.StatusAccepted, "Job enqueued"))
	register(rs, http.MethodGet, "/v1/passport-versions/{id}", "get-passport-version", "Get a passport version", s.handleGetPassportVersion,
		responds[bpctype.PassportVersion](http.StatusOK, "The version"))
	register(rs, http.MethodGet, "/v1/passport-versions/{id}/payload", "get-passport-payload", "The compiled payload, bytes as hashed", s.artifactHandler("application/json", payloadArtifact),
		raw("The payload (ETag: its hash)", "application/json"))
	register(rs, http.MethodGet, "/v1/passport-versions/{id}/proof", "get-passport-proof", "The proof, bytes as hashed", s.artifactHandler("application/json", proofArtifact),
		raw("The proof (ETag: its root hash)", "application/json"))
	register(rs, http.MethodGet, "/v1/passport-versions/{id}/receipt", "get-passport-receipt", "The receipt, signed once there is a signature", s.artifactHandler("application/json", receiptArtifact),
		raw("The receipt (ETag: its hash)", "application/json"))
	register(rs, http.MethodGet, "/v1/passport-versions/{id}/qr.png", "get-passport-qr", "The QR code as PNG", s.artifactHandler("image/png", qrArtifact),
		raw("The PNG (ETag: its SHA-256)", "image/png"))
	register(rs, http.MethodPost, "/v1/passport-versions/{id}/activate", "activate-passport-version", "Activate a SIGNED version", s.handleActivatePassportVersion,
		jsonBody[tenantRequest],
		responds[bpctype.PassportVersion](http.StatusOK, "Activated"))
	register(rs, http.MethodPost, "/v1/passport-versions/{id}/export", "export-passport-version", "Enqueue EXPORT_PASSPORT", s.handleExportPassportVersion,
		jsonBody[exportRequest],
		responds[jobResponse](http.StatusAccepted, "Job enqueued"))
	register(rs, http.MethodGet, "/v1/passport-versions/{id}/exports", "list-passport-exports", "List a version's exports", s.handleListPassportExports,
		responds[items[bpctype.PassportExport]](http.StatusOK, "Exports, newest first"))
	register(rs, http.MethodGet, "/v1/passport-versions/{id}/export-file", "get-passport-export-file", "The newest export file of a format", s.handleGetExportFile,
		raw("The file, checked against its recorded SHA-256 (ETag)", "application/json", "application/pdf"))
	register(rs, http.MethodPost, "/v1/passport-versions/{id}/replay", "replay-passport-version", "Recompile a version from its stored inputs and compare", s.handleReplayPassportVersion,
		jsonBody[tenantRequest],
		responds[passport.ReplayReport](http.StatusOK, "Every byte and hash matches (409 REPLAY_MISMATCH otherwise)"))

	s.signingKeyRoutes(rs)
}

func ptr[T any](v T) *T { return &v }

// reads are the Queries of the list routes and the public routes: the
// read-routed ones (a replica while it is healthy) when the service has
// them. A list is a view an operator refreshes, and a replica a few
// seconds behind serves it; a get by id, which a client makes right after
// its write, stays on the primary.
func (s *Server) reads() *store.Queries {
	if s.Reads != nil {
		return s.Reads
	}
	return s.Store
}
