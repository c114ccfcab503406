package workers

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/bpc-platform/bpc/core/compiler"

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
	// fields: DefaultBreakerConfig).
	WebhookBreaker BreakerConfig
	// CompilerBuildID is recorded in every receipt (BPC_COMPILER_BUILD_ID).
	CompilerBuildID string
	// Limits are the artifact size limits (BPC_*_MAX_BYTES) and the rule
	// limits (BPC_RULES_MAX_NODES, BPC_RULES_MAX_CASES) of compiles and
	// rule test runs.
	Limits compiler.Limits
	// Signer signs receipts; its KeyID is compiled into them.
	Signer *passport.Signer
	// ExportDir is where EXPORT_PASSPORT writes files (BPC_EXPORT_DIR).
	ExportDir string
	// BeforeCommit, when set, runs inside a pipeline handler's transaction
	// after its effects and before the job's completion; an error or a panic
	// aborts the transaction. Tests use it to simulate a crash there.
	BeforeCommit func(ctx context.Context, job *rivertype.JobRow) error
}

// registry is the one list of implemented workers: adding a job type adds a
// line here.
var registry = []struct {
	kind string
	add  func(*river.Workers, Deps)
}{
	{jobargs.KindIngestDocument, func(w *river.Workers, d Deps) { river.AddWorker(w, &IngestDocumentWorker{Deps: d}) }},
	{jobargs.KindParseFacts, func(w *river.Workers, d Deps) { river.AddWorker(w, &ParseFactsWorker{Deps: d}) }},
	{jobargs.KindBuildSnapshot, func(w *river.Workers, d Deps) { river.AddWorker(w, &BuildSnapshotWorker{Deps: d}) }},
	{jobargs.KindCompile, func(w *river.Workers, d Deps) { river.AddWorker(w, &CompilePassportWorker{Deps: d}) }},
	{jobargs.KindSign, func(w *river.Workers, d Deps) { river.AddWorker(w, &SignPassportWorker{Deps: d}) }},
	{jobargs.KindGenerateQR, func(w *river.Workers, d Deps) { river.AddWorker(w, &GenerateQRWorker{Deps: d}) }},
	{jobargs.KindExport, func(w *river.Workers, d Deps) { river.AddWorker(w, &ExportPassportWorker{Deps: d}) }},
	{jobargs.KindRunRuleTests, func(w *river.Workers, d Deps) { river.AddWorker(w, &RunRuleTestsWorker{Deps: d}) }},
	{jobargs.KindDeliverWebhook, func(w *river.Workers, d Deps) {
		river.AddWorker(w, &DeliverWebhookWorker{Store: d.Store, Client: d.HTTPClient, Metrics: d.Metrics,
			RequestTimeout: d.WebhookTimeout, Breaker: d.WebhookBreaker, Logger: d.Logger})
	}},
}

// EnabledKinds lists the job types that have a worker, in registry order.
func EnabledKinds() []string {
	out := make([]string, len(registry))
	for i, r := range registry {
		out[i] = r.kind
	}
	return out
}

// IsEnabled reports whether kind has a worker.
func IsEnabled(kind string) bool {
	for _, r := range registry {
		if r.kind == kind {
			return true
		}
	}
	return false
}

// Register adds every implemented worker to w.
func Register(w *river.Workers, d Deps) {
	for _, r := range registry {
		r.add(w, d)
	}
}
