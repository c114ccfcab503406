package api

import (
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// What the document says of each operation beyond its types: its group
// (tag), what it does, who may call it, whether it may be repeated and
// what it enqueues. operation() applies the entry of its operationId, and
// the error responses follow from it (errorStatuses); a route whose id has
// no entry fails TestEveryOperationHasItsDocs.

// Tags, in the order a reader meets them.
const (
	tagJobs      = "Jobs"
	tagTenants   = "Tenants"
	tagKeys      = "API keys"
	tagEvents    = "Events"
	tagWebhooks  = "Webhooks"
	tagDocuments = "Documents & facts"
	tagSnapshots = "Snapshots"
	tagRules     = "Rule packages"
	tagPassports = "Products & passports"
	tagSigning   = "Signing keys"
	tagPublic    = "Public verification"
	tagHealth    = "Health & metrics"
)

// docTags are the document's tags with their descriptions.
var docTags = []*huma.Tag{
	{Name: tagJobs, Description: "Background jobs (River on Postgres) and their SSOT mirror: enqueue one job or a batch, " +
		"idempotently with Idempotency-Key; list, read (with a long-poll), retry and cancel them."},
	{Name: tagTenants, Description: "Tenants partition every resource. Created by the platform operator (BPC_ADMIN_TOKEN)."},
	{Name: tagKeys, Description: "Tenant API keys (bpc_<prefix>_<secret>) with a role: admin, writer or reader. " +
		"Managed by the platform token or a tenant admin key."},
	{Name: tagEvents, Description: "The tenant's hash-chained audit log: append custom events; each is fanned out to subscribed webhook endpoints."},
	{Name: tagWebhooks, Description: "Webhook endpoints (with their circuit breaker), subscriptions to event types and deliveries."},
	{Name: tagDocuments, Description: "Source documents (BOM, PCF, DUE_DILIGENCE), their uploaded versions and the facts parsed from them."},
	{Name: tagSnapshots, Description: "Snapshots: sets of facts that are built (BUILDING → READY), then sealed, and compiled into passports."},
	{Name: tagRules, Description: "Rule packages: DSL sources with their tests; a version is drafted, tested, then published."},
	{Name: tagPassports, Description: "Battery products, their passports and passport versions: compile, sign, activate, export, replay; artifacts."},
	{Name: tagSigning, Description: "The public keys that verify passport receipts."},
	{Name: tagPublic, Description: "Public verification of published passports, without credentials; rate limited per client address."},
	{Name: tagHealth, Description: "Liveness and readiness probes (no credentials) and Prometheus metrics (platform token)."},
}

// caller is who may call an operation (SPEC §10).
type caller int

const (
	// callerDefault: reader for GET, writer otherwise.
	callerDefault caller = iota
	callerReader
	callerWriter
	// callerKeyAdmin: the platform token or a tenant admin key.
	callerKeyAdmin
	// callerPlatform: the platform token only.
	callerPlatform
	// callerPublic: no credentials.
	callerPublic
)

var callerText = map[caller]string{
	callerReader: "The platform token (with tenant_id), or any tenant API key of the resource's tenant " +
		"(reader, writer or admin); another tenant's ids are 404, another tenant's tenant_id 403.",
	callerWriter: "The platform token (with tenant_id), or a tenant writer or admin key for its own tenant; " +
		"a reader key is 403, another tenant's ids are 404, another tenant's tenant_id 403.",
	callerKeyAdmin: "The platform token (with tenant_id), or a tenant admin key for its own tenant; writer and reader keys are 403.",
	callerPlatform: "The platform token (BPC_ADMIN_TOKEN) only; tenant API keys are 403.",
	callerPublic:   "Anyone: no credentials (security: []). Rate limited per client address (429 with Retry-After).",
}

// opDoc documents one operation.
type opDoc struct {
	tag    string
	caller caller
	// text says what the operation does.
	text string
	// idempotent says whether and how the operation may be repeated;
	// empty for a GET: "read-only".
	idempotent string
	// enqueues names the job types the operation enqueues, if any.
	enqueues string
	// conflict says when the answer is 409; empty: never.
	conflict string
	// notFound: the body names other resources (404 when they are not the
	// tenant's), besides any {id} of the path.
	notFound bool
	// credentials: a public operation that checks credentials when sent
	// (401 for wrong ones, 429 once the address's failures are over their
	// rate).
	credentials bool
}

const (
	repeatCreate = "Not idempotent: each call creates a new resource (retry only after reading whether the first call took effect)."
	repeatSame   = "Idempotent: repeating it leaves the same state."
	// The operations that start a job (startJob): 202 with the job.
	repeatJob = "Idempotent with an Idempotency-Key header: the same key and request answer the existing job; " +
		"without one every call enqueues a new job. The job checks the resource's state when it runs."
	conflictJob = "IDEMPOTENCY_CONFLICT: the Idempotency-Key was used for a different request."
)

var opDocs = map[string]opDoc{
	// Health & metrics
	"health-live": {tag: tagHealth, caller: callerPublic,
		text: "Liveness probe: answers 200 {\"status\":\"ok\"} as long as the process serves HTTP; it checks nothing else."},
	"health-ready": {tag: tagHealth, caller: callerPublic,
		text: "Readiness probe: runs every readiness check (database, schema version, and for worker roles the River client) " +
			"and answers 200 when all pass, 503 naming the failing check otherwise. A check that only slows the service " +
			"(the RabbitMQ trigger) makes it `degraded` with 200.", credentials: true},
	"api-index": {tag: tagHealth, caller: callerPublic,
		text: "Links to what this process serves: the API reference, this document, the health probes, metrics and River UI."},
	"metrics": {tag: tagHealth, caller: callerPlatform,
		text: "Prometheus metrics of this process in the text exposition format (HTTP, jobs, queues, webhooks)."},

	// Tenants
	"create-tenant": {tag: tagTenants, caller: callerPlatform, text: "Creates a tenant.", idempotent: repeatCreate},
	"list-tenants": {tag: tagTenants, caller: callerReader,
		text: "Lists tenants: every tenant for the platform token, the key's own tenant for a tenant API key."},
	"update-tenant-quotas": {tag: tagTenants, caller: callerPlatform,
		text: "Overrides a tenant's quotas (SPEC §15): each limit in quotas replaces the service's default for this tenant, " +
			"each name in reset goes back to the default. An unknown quota name or a limit out of its bounds is 422 naming it. " +
			"Answers the tenant's effective quotas.",
		idempotent: repeatSame},
	"get-tenant-usage": {tag: tagTenants,
		text: "A tenant's effective quotas and what it uses of them now: queued and running jobs, live webhook endpoints, " +
			"subscriptions and unrevoked API keys. The platform token, or any key of the tenant; another tenant's id is 403."},
	"put-tenant-issuer": {tag: tagTenants, caller: callerKeyAdmin,
		text: "Creates or replaces the tenant's issuer profile (SPEC §16): legal_name (1-200 printable characters), " +
			"country (an assigned ISO 3166-1 alpha-2 code in upper case), registration_id (1-100 printable characters) and " +
			"an optional https website (at most 300 characters). A member that is wrong is 422 naming it. Any change clears " +
			"identity_verified_at and is audited as issuer.updated (saying whether verification was cleared); the same values " +
			"again change nothing. The platform token, or an admin key of the tenant; another tenant's id is 404.",
		idempotent: repeatSame},
	"get-tenant-issuer": {tag: tagTenants, caller: callerKeyAdmin,
		text: "The tenant's issuer profile; 404 when it has none. The platform token, or an admin key of the tenant; another tenant's id is 404."},
	"verify-tenant-issuer": {tag: tagTenants, caller: callerPlatform,
		text: "Records that the platform checked the company the tenant's issuer profile names: identity_verified_at becomes now, " +
			"audited as issuer.verified with the values checked. The body is what the operator checked — legal_name, country, " +
			"registration_id and website as read with GET /v1/tenants/{id}/issuer — and must equal the stored profile exactly " +
			"(no website and an empty one are the same); a malformed body is 422. Only then do the tenant's passports show a green " +
			"VERIFIED. 404 when the tenant has no profile.",
		idempotent: repeatSame,
		conflict:   "CONFLICT: the profile changed since it was read (the body is not the stored profile); nothing is verified. Read it again, check the company it names, verify those values."},

	// API keys
	"create-api-key": {tag: tagKeys, caller: callerKeyAdmin,
		text:       "Creates an API key with a role (admin, writer, reader) for a tenant. The token is answered once and never again.",
		idempotent: repeatCreate, conflict: "QUOTA_EXCEEDED: the tenant has its api_keys quota of unrevoked keys (details: quota, limit, used)."},
	"list-api-keys": {tag: tagKeys, caller: callerKeyAdmin, text: "Lists a tenant's API keys, without their tokens."},
	"revoke-api-key": {tag: tagKeys, caller: callerKeyAdmin,
		text: "Revokes an API key: requests with its token are 401 from then on.", idempotent: repeatSame},

	// Jobs
	"enqueue-job": {tag: tagJobs,
		text: "Enqueues one job of a registered type with its payload; the answer is its SSOT row (status QUEUED).",
		idempotent: "Idempotent with an Idempotency-Key (header or body): the same key and request answer the existing job with 200; " +
			"the same key with a different request is 409 IDEMPOTENCY_CONFLICT. Without a key every call enqueues a new job.",
		enqueues: "the job of the request's type", conflict: "IDEMPOTENCY_CONFLICT: the key was used for a different request.",
		notFound: true},
	"enqueue-jobs-batch": {tag: tagJobs,
		text: "Enqueues up to 1000 jobs in one transaction: all or none. Each item answers its job and whether it was created. " +
			"A tenant pays one request per job from its tenant's request budget (its key one request): a batch over the tenant's burst is 422 naming jobs, " +
			"one the budget cannot hold yet 429 with Retry-After.",
		idempotent: "Per job, as enqueue-job: items whose Idempotency-Key and request match an existing job answer it (200 when every item did).",
		enqueues:   "one job per item", conflict: "IDEMPOTENCY_CONFLICT: an item's key was used for a different request.", notFound: true},
	"list-jobs": {tag: tagJobs, text: "Lists jobs newest first, by page (next_cursor), filtered by type, status and creation time."},
	"get-job": {tag: tagJobs,
		text: "Reads a job. With wait_ms it long-polls until the job reaches a terminal status (200) or the wait ends (202 with Retry-After)."},
	"retry-job": {tag: tagJobs,
		text:       "Queues a job that failed, was cancelled or dead-lettered for one more attempt (an operator retry).",
		idempotent: "Not idempotent: each call queues one more attempt.", enqueues: "the job again (same job id)",
		conflict: "INVALID_STATE: the job is running or succeeded, or its River job was deleted."},
	"cancel-job": {tag: tagJobs, text: "Cancels a job that has not finished; a running job is asked to stop.",
		idempotent: "Cancelling a job that has ended (a cancelled one too) is 409 INVALID_STATE.",
		conflict:   "INVALID_STATE: the job has already ended."},

	// Events
	"append-event": {tag: tagEvents,
		text: "Appends a custom event to an aggregate's hash chain in the tenant's audit log, and creates one webhook delivery " +
			"per active endpoint subscribed to its type. actor_id is the key's own (api_key:<id>) for a tenant key.",
		idempotent: repeatCreate, enqueues: "DELIVER_WEBHOOK, one per subscribed endpoint",
		conflict: "EVENT_VERSION_CONFLICT (retryable): racing appends to the same aggregate kept taking the version, through the server's own retries; send it again."},

	// Webhooks
	"create-webhook-endpoint": {tag: tagWebhooks,
		text:       "Registers an HTTPS endpoint that receives the tenant's subscribed events, signed with the given secret.",
		idempotent: repeatCreate, conflict: "QUOTA_EXCEEDED: the tenant has its webhook_endpoints quota of live endpoints (details: quota, limit, used); " +
			"CONFLICT: a live endpoint of the tenant has the same URL (scheme and host case, default port and an empty path aside)."},
	"list-webhook-endpoints": {tag: tagWebhooks, text: "Lists the tenant's webhook endpoints (without secrets)."},
	"get-webhook-endpoint": {tag: tagWebhooks,
		text: "Reads a webhook endpoint with the state of its circuit breaker (CLOSED, OPEN, HALF_OPEN)."},
	"update-webhook-endpoint": {tag: tagWebhooks, text: "Changes an endpoint's URL, or pauses (is_active false) or resumes its deliveries.", idempotent: repeatSame,
		conflict: "CONFLICT: another live endpoint of the tenant has the new URL."},
	"delete-webhook-endpoint": {tag: tagWebhooks, text: "Deletes an endpoint (it is no longer listed nor delivered to) and its subscriptions.",
		idempotent: "Deleting a deleted endpoint is 404."},
	"ping-webhook-endpoint": {tag: tagWebhooks, text: "Sends a webhook.ping event to the endpoint, through the normal delivery path.",
		idempotent: "Not idempotent: each call sends one more ping.", enqueues: "DELIVER_WEBHOOK",
		conflict: "INVALID_STATE: the endpoint is inactive."},
	"create-webhook-subscription": {tag: tagWebhooks, text: "Subscribes an endpoint to an event type (or a filter of types).",
		idempotent: repeatCreate, conflict: "INVALID_STATE: the endpoint is already subscribed to this event type; " +
			"QUOTA_EXCEEDED: the tenant has its webhook_subscriptions quota (details: quota, limit, used).", notFound: true},
	"list-webhook-subscriptions": {tag: tagWebhooks, text: "Lists the tenant's webhook subscriptions, optionally of one endpoint."},
	"delete-webhook-subscription": {tag: tagWebhooks, text: "Deletes a subscription; later events are no longer delivered for it.",
		idempotent: "Deleting a deleted subscription is 404."},
	"get-webhook-delivery": {tag: tagWebhooks, text: "Reads a webhook delivery: its attempts, last status and next attempt."},

	// Documents & facts
	"create-document": {tag: tagDocuments, text: "Creates a named document of a kind (BOM, PCF, DUE_DILIGENCE); its content is uploaded as versions.",
		idempotent: repeatCreate},
	"list-documents": {tag: tagDocuments, text: "Lists the tenant's documents."},
	"get-document":   {tag: tagDocuments, text: "Reads a document with its versions."},
	"upload-document-version": {tag: tagDocuments,
		text: "Uploads a new version of a document (content in the body) and enqueues its parsing into facts.",
		idempotent: "Idempotent on content: uploading the content of the newest version again answers that version with 200; " +
			"new content creates a version (201).",
		enqueues: "PARSE_FACTS"},
	"get-document-version": {tag: tagDocuments, text: "Reads a document version: its status (UPLOADED, VALIDATED, REJECTED), error and fact count."},
	"list-facts":           {tag: tagDocuments, text: "Lists the tenant's facts, optionally of one document version or fact type."},

	// Snapshots
	"create-snapshot": {tag: tagSnapshots, text: "Creates an empty snapshot in status BUILDING.", idempotent: repeatCreate},
	"get-snapshot":    {tag: tagSnapshots, text: "Reads a snapshot: status, item count and, once sealed, its hash."},
	"add-snapshot-items": {tag: tagSnapshots, text: "Adds facts to a BUILDING snapshot.",
		idempotent: "Idempotent: a fact already in the snapshot is not added twice.",
		conflict:   "INVALID_STATE: the snapshot is no longer BUILDING.", notFound: true},
	"list-snapshot-items": {tag: tagSnapshots, text: "Lists a snapshot's facts."},
	"build-snapshot": {tag: tagSnapshots, text: "Enqueues the job that moves a BUILDING snapshot to READY.",
		idempotent: repeatJob, enqueues: "BUILD_SNAPSHOT", conflict: conflictJob},
	"seal-snapshot": {tag: tagSnapshots, text: "Seals a READY snapshot: computes its BPC-SNAPSHOT-1 hash; it cannot change afterwards.",
		idempotent: "Sealing a SEALED snapshot is 409.", conflict: "SNAPSHOT_SEALED, SNAPSHOT_NOT_READY or INVALID_STATE: the snapshot is not READY."},

	// Rule packages
	"create-rule-package": {tag: tagRules, text: "Creates a named rule package; its DSL and tests are added as versions.",
		idempotent: repeatCreate, conflict: "CONFLICT: a package of this name exists."},
	"list-rule-packages": {tag: tagRules, text: "Lists the tenant's rule packages."},
	"get-rule-package":   {tag: tagRules, text: "Reads a rule package with its versions."},
	"create-rule-package-version": {tag: tagRules,
		text:       "Checks the DSL and tests sources (parse, types, units, cycles: 422 when they do not check) and stores them as the package's next DRAFT version.",
		idempotent: repeatCreate},
	"get-rule-package-version": {tag: tagRules, text: "Reads a rule package version; include=sources adds its DSL and tests sources."},
	"run-rule-tests": {tag: tagRules, text: "Enqueues a run of the version's tests; the run is listed under test-runs.",
		idempotent: repeatJob, enqueues: "RUN_RULE_TESTS", conflict: conflictJob},
	"list-rule-test-runs": {tag: tagRules, text: "Lists a version's test runs with their counts and first failure."},
	"publish-rule-package-version": {tag: tagRules, text: "Publishes a version whose latest test run passed; passports compile against published versions only.",
		idempotent: "Publishing a PUBLISHED version answers it again.", conflict: "RULE_TESTS_FAILED or INVALID_STATE: no passing test run."},

	// Products & passports
	"create-battery-product": {tag: tagPassports, text: "Creates a battery product (a model with a SKU unique per tenant).",
		idempotent: repeatCreate, conflict: "CONFLICT: the SKU exists."},
	"list-battery-products": {tag: tagPassports, text: "Lists the tenant's battery products."},
	"get-battery-product":   {tag: tagPassports, text: "Reads a battery product."},
	"create-passport": {tag: tagPassports, text: "Creates the passport of a battery product; its versions are compiled later.",
		idempotent: repeatCreate, notFound: true},
	"get-passport": {tag: tagPassports, text: "Reads a passport with its versions."},
	"compile-passport": {tag: tagPassports,
		text: "Enqueues the compilation of a new passport version from a sealed snapshot and a published rule package version; " +
			"signing and the QR code follow as jobs of their own.",
		idempotent: repeatJob, enqueues: "COMPILE_PASSPORT (then SIGN_PASSPORT and GENERATE_QR)", conflict: conflictJob},
	"get-passport-version": {tag: tagPassports, text: "Reads a passport version: status, hashes, signature and QR payload."},
	"get-passport-payload": {tag: tagPassports, text: "The compiled BPC-PASSPORT-1 payload, byte for byte as hashed (payload_hash)."},
	"get-passport-proof":   {tag: tagPassports, text: "The BPC-PROOF-1 proof, byte for byte as hashed (proof_root_hash)."},
	"get-passport-receipt": {tag: tagPassports, text: "The BPC-RECEIPT-1 receipt: signed once the version is signed, the unsigned canonical receipt before."},
	"get-passport-qr":      {tag: tagPassports, text: "The QR code of the version as a PNG image: the BPC-QR-2 link to its public page (BPC-QR-1 for versions issued before links)."},
	"activate-passport-version": {tag: tagPassports,
		text:       "Activates a SIGNED version: it becomes the passport's active version and the previous one SUPERSEDED.",
		idempotent: "Activating the ACTIVE version answers it again.", conflict: "INVALID_STATE: the version is not SIGNED."},
	"export-passport-version": {tag: tagPassports, text: "Enqueues an export of an ACTIVE version as JSON or PDF (the job fails for a version that is not ACTIVE).",
		idempotent: repeatJob, enqueues: "EXPORT_PASSPORT", conflict: conflictJob},
	"list-passport-exports": {tag: tagPassports, text: "Lists a version's export files with their SHA-256."},
	"get-passport-export-file": {tag: tagPassports,
		text:     "The newest export file of a format, checked against its recorded SHA-256 (ETag).",
		conflict: "INVALID_STATE: the file changed since it was written."},
	"replay-passport-version": {tag: tagPassports,
		text:       "Recompiles a version from its stored inputs and compares every byte and hash with what was stored.",
		idempotent: "Read-only: replaying changes nothing.", conflict: "REPLAY_MISMATCH: a byte or hash differs."},

	// Signing keys
	"list-signing-keys": {tag: tagSigning,
		text: "Lists the tenant's Ed25519 signing keys (active, retired, revoked, with their times) and the platform's legacy keys: " +
			"the public keys that verify its passport receipts, by key id. Never private material."},
	"rotate-signing-key": {tag: tagSigning, caller: callerKeyAdmin,
		text: "Retires the tenant's active signing key (what it signed still verifies) and makes a new active one, which the next compiles name. " +
			"A tenant without an active key just gets one.",
		idempotent: "Not idempotent: each call makes a new key and retires the one before."},
	"revoke-signing-key": {tag: tagSigning, caller: callerKeyAdmin,
		text: "Revokes one of the tenant's signing keys since compromised_at (default now; never in the future): versions it signed at or after " +
			"that time no longer verify, versions compiled for it are not signed (KEY_REVOKED). Revoking the active key leaves the tenant " +
			"without one; the next compile creates a fresh key. Another tenant's key and the platform's legacy keys are 404.",
		idempotent: "Revoking a revoked key again may only move compromised_at earlier (with the new reason); " +
			"a time at or after the stored one changes nothing and answers the key as it is."},

	// Public verification
	"public-passport-version": {tag: tagPublic, caller: callerPublic,
		text: "A published passport version (ACTIVE or SUPERSEDED), its product and whether its stored bytes verify."},
	"public-verify-qr": {tag: tagPublic, caller: callerPublic,
		text: "Checks a scanned QR code (a BPC-QR-1 string or a BPC-QR-2 link) against the passport version it names.", notFound: true},
	"public-issuer": {tag: tagPublic, caller: callerPublic,
		text: "An issuer's public key directory (SPEC §16): its profile and the public halves of its signing keys with their status. " +
			"Save it to pin the issuer's keys offline: bpc verify --keys FILE."},
	"public-link": {tag: tagPublic, caller: callerPublic,
		text: "Where a passport's QR code (a BPC-QR-2 link) leads: the version's page, comparing the hashes the link printed with the stored ones."},
}

// publicPage reports whether path is a public route that answers a
// browser with a page, errors included: /public/… and the QR links' /p/….
func publicPage(path string) bool {
	return strings.HasPrefix(path, "/public/") || strings.HasPrefix(path, "/p/")
}

// callerOf is who may call an operation of method.
func (d opDoc) callerOf(method string) caller {
	if d.caller != callerDefault {
		return d.caller
	}
	if method == http.MethodGet {
		return callerReader
	}
	return callerWriter
}

// description composes the operation's description: what it does, who
// may call it, whether it may be repeated, what it enqueues, then the
// route's own notes (describe).
func (d opDoc) description(method, notes string) string {
	var b strings.Builder
	b.WriteString(d.text)
	b.WriteString("\n\n**Who may call it:** " + callerText[d.callerOf(method)])
	idem := d.idempotent
	if idem == "" && method == http.MethodGet {
		idem = "Read-only; safe to repeat."
	}
	if idem != "" {
		b.WriteString("\n\n**Idempotency:** " + idem)
	}
	if d.enqueues != "" {
		b.WriteString("\n\n**Enqueues:** " + d.enqueues + ".")
	}
	if notes != "" {
		b.WriteString("\n\n" + notes)
	}
	return b.String()
}

// errorStatuses are the error statuses an operation documents explicitly
// (others fall to "default"): 401 and 403 for credentials and role, 404 for
// ids, 409 for conflicts, 413 for bodies, 422 for invalid input, 429 for
// rate limits (and queue backpressure), 503 where a job is enqueued.
func (d opDoc) errorStatuses(o *huma.Operation) []int {
	acc := d.callerOf(o.Method)
	hasInput := o.RequestBody != nil || len(o.Parameters) > 0
	var out []int
	if acc != callerPublic {
		out = append(out, http.StatusUnauthorized, http.StatusForbidden)
	}
	if d.credentials {
		out = append(out, http.StatusUnauthorized)
	}
	if strings.Contains(o.Path, "{") || d.notFound {
		out = append(out, http.StatusNotFound)
	}
	if d.conflict != "" {
		out = append(out, http.StatusConflict)
	}
	if o.RequestBody != nil {
		out = append(out, http.StatusRequestEntityTooLarge)
	}
	if hasInput || acc != callerPublic {
		// Authenticated routes check every query string (unknown
		// parameters, NUL, invalid UTF-8) even without parameters.
		out = append(out, http.StatusUnprocessableEntity)
	}
	if acc != callerPublic || publicPage(o.Path) || d.credentials {
		out = append(out, http.StatusTooManyRequests)
	}
	if d.enqueues != "" {
		out = append(out, http.StatusServiceUnavailable)
	}
	return out
}

var errorText = map[int]string{
	http.StatusUnauthorized:          "UNAUTHORIZED: no bearer token, not a Bearer scheme, or an unknown, expired or revoked token.",
	http.StatusForbidden:             "FORBIDDEN: the token's role may not do this, or tenant_id names another tenant.",
	http.StatusNotFound:              "NOT_FOUND: no such resource (or it belongs to another tenant).",
	http.StatusConflict:              "Conflict with the resource's state.",
	http.StatusRequestEntityTooLarge: "BODY_TOO_LARGE: the body exceeds BPC_MAX_BODY_BYTES (PAYLOAD_TOO_LARGE: an event payload exceeds the tenant's event_payload_bytes quota).",
	http.StatusUnprocessableEntity:   "VALIDATION_ERROR (or a more specific code): an invalid parameter or body member, named in details.field.",
	http.StatusTooManyRequests:       "RATE_LIMITED: too many requests for this key, its tenant (shared by all its keys) or the client address; retry after Retry-After seconds. Enqueues: QUOTA_EXCEEDED when the tenant's queued jobs would pass its queued_jobs quota (nothing enqueued).",
	http.StatusServiceUnavailable:    "QUEUE_UNAVAILABLE or DB_UNAVAILABLE: retry after Retry-After seconds.",
}
