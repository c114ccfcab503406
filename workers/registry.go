package workers

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/core/facts"
	"github.com/bpc-platform/bpc/internal/webhook/breaker"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// Deps are what workers need from the service.
type Deps struct {
	Store          *store.Queries
	Logger         *slog.Logger
	Metrics        *Metrics
	HTTPClient     *http.Client
	WebhookTimeout time.Duration
	// WebhookBreaker tunes the webhook endpoints' circuit breaker (zero
	// fields: breaker.DefaultConfig).
	WebhookBreaker breaker.Config
	// CompilerBuildID is recorded in every receipt (BPC_COMPILER_BUILD_ID).
	CompilerBuildID string
	// Limits are the artifact size limits (BPC_*_MAX_BYTES) and the rule
	// limits (BPC_RULES_MAX_NODES, BPC_RULES_MAX_CASES) of compiles and
	// rule test runs.
	Limits compiler.Limits
	// Keys are the tenants' signing keys (and the platform's legacy key):
	// a compile names the tenant's active key, a sign uses the key named.
	Keys *passport.Keyring
	// ExportDir is where EXPORT_PASSPORT writes files (BPC_EXPORT_DIR).
	ExportDir string
	// UploadsDir is where INGEST_DOCUMENT reads content_ref files
	// (BPC_UPLOADS_DIR); empty refuses content_ref. A file is bounded by
	// Limits.PayloadMaxBytes.
	UploadsDir string
	// BeforeCommit, when set, runs inside a pipeline handler's transaction
	// after its effects and before the job's completion; an error or a panic
	// aborts the transaction. Tests use it to simulate a crash there.
	BeforeCommit func(ctx context.Context, job *rivertype.JobRow) error
	// Publisher, when set, hears the queues of the jobs a handler's
	// committed transaction inserted (the RabbitMQ trigger).
	Publisher passport.Publisher
	// PublicBaseURL returns the base of the BPC-QR-2 links GENERATE_QR
	// renders (BPC_PUBLIC_BASE_URL): a function, because in dev it is the
	// address the HTTP server listens on, known only once it listens.
	PublicBaseURL func() string
}

// registry is the one list of job types: adding a job type is its args in
// jobargs/<kind>.go, its worker in workers/<kind>.go and one line here. The
// admin API's enqueue validation, the OpenAPI document and the tests derive
// from it.
var registry = []registration{
	register("Stores a new version of a document and enqueues its PARSE_FACTS.",
		func(d Deps) river.Worker[jobargs.IngestDocumentArgs] {
			return &IngestDocumentWorker{UploadsDir: d.UploadsDir, MaxUploadBytes: d.uploadMaxBytes(), Completer: d.completer()}
		}),
	register("Parses an uploaded document version into facts.",
		func(d Deps) river.Worker[jobargs.ParseFactsArgs] { return &ParseFactsWorker{Completer: d.completer()} }),
	register("Moves a snapshot from BUILDING to READY.",
		func(d Deps) river.Worker[jobargs.BuildSnapshotArgs] {
			return &BuildSnapshotWorker{Completer: d.completer()}
		}),
	register("Compiles a sealed snapshot with a published rule package version into a passport version and enqueues its SIGN_PASSPORT.",
		func(d Deps) river.Worker[jobargs.CompilePassportArgs] {
			return &CompilePassportWorker{Store: d.Store, CompilerBuildID: d.CompilerBuildID, Keys: d.Keys, Limits: d.Limits,
				Metrics: d.Metrics, Completer: d.completer()}
		}),
	register("Signs a compiled passport version's receipt with Ed25519 and enqueues its GENERATE_QR.",
		func(d Deps) river.Worker[jobargs.SignPassportArgs] {
			return &SignPassportWorker{Keys: d.Keys, Completer: d.completer()}
		}),
	register("Renders the QR code of a signed passport version: the BPC-QR-2 link to its public page.",
		func(d Deps) river.Worker[jobargs.GenerateQRArgs] {
			return &GenerateQRWorker{Store: d.Store, PublicBaseURL: d.PublicBaseURL, Completer: d.completer()}
		}),
	register("Writes an ACTIVE passport version to an export file.",
		func(d Deps) river.Worker[jobargs.ExportPassportArgs] {
			return &ExportPassportWorker{Store: d.Store, ExportDir: d.ExportDir, Completer: d.completer()}
		}),
	register("Runs a rule package version's example and property tests and records the run.",
		func(d Deps) river.Worker[jobargs.RunRuleTestsArgs] {
			return &RunRuleTestsWorker{Store: d.Store, Limits: d.Limits.Rules, Completer: d.completer()}
		}),
	register("POSTs one event to one webhook endpoint with an HMAC signature.",
		func(d Deps) river.Worker[jobargs.DeliverWebhookArgs] {
			return &DeliverWebhookWorker{Store: d.Store, Client: d.HTTPClient, Metrics: d.Metrics,
				RequestTimeout: d.WebhookTimeout, Breaker: d.WebhookBreaker, Logger: d.Logger}
		}),
}

// completer is what every pipeline worker needs to complete its job with
// its writes.
func (d Deps) completer() Completer {
	return Completer{Store: d.Store, BeforeCommit: d.BeforeCommit, Publisher: d.Publisher}
}

// uploadMaxBytes bounds a content_ref file: BPC_PAYLOAD_MAX_BYTES, and
// never more than a document may be.
func (d Deps) uploadMaxBytes() int {
	if d.Limits.PayloadMaxBytes <= 0 {
		return compiler.DefaultPayloadMaxBytes
	}
	return min(d.Limits.PayloadMaxBytes, facts.MaxDocumentBytes)
}

// registration is a job type and how to add its worker.
type registration struct {
	jobargs.Kind
	add func(*river.Workers, Deps) error
}

// register pairs the job type whose args are A with its worker, which runs
// only on valid args.
func register[A jobargs.Args](summary string, newWorker func(Deps) river.Worker[A]) registration {
	return registration{
		Kind: jobargs.KindOf[A](summary),
		add:  func(w *river.Workers, d Deps) error { return river.AddWorkerSafely[A](w, validated[A]{newWorker(d)}) },
	}
}

// Kinds returns the job types, in registry order.
func Kinds() []jobargs.Kind {
	out := make([]jobargs.Kind, len(registry))
	for i, r := range registry {
		out[i] = r.Kind
	}
	return out
}

// Register adds every job type's worker to w. Like river.AddWorker, it
// panics on a kind registered twice: a programming error.
func Register(w *river.Workers, d Deps) {
	for _, r := range registry {
		if err := r.add(w, d); err != nil {
			panic(fmt.Sprintf("error registering the %s worker: %v", r.Name, err))
		}
	}
}
