package workers

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/riverqueue/river"

	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// Deps are what workers need from the service.
type Deps struct {
	Store          *store.Store
	Logger         *slog.Logger
	Metrics        *Metrics
	HTTPClient     *http.Client
	WebhookTimeout time.Duration
}

// registry is the one list of implemented workers: adding a job type adds a
// line here.
var registry = []struct {
	kind string
	add  func(*river.Workers, Deps)
}{
	{jobargs.KindDeliverWebhook, func(w *river.Workers, d Deps) {
		river.AddWorker(w, &DeliverWebhookWorker{Store: d.Store, Client: d.HTTPClient, Metrics: d.Metrics, RequestTimeout: d.WebhookTimeout})
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
