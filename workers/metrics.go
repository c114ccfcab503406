package workers

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/compiler"
	"github.com/bpc-platform/bpc/core/errcode"
)

// Metrics are the job metrics of SPEC §9, one set for the handlers and the
// job runtime alike: the handlers record their own (webhook deliveries,
// breaker transitions, compiles), jobrun's Observer and Reaper those of
// every attempt (JobsCompleted, JobDuration, DeadLetter). They live here,
// beside the handlers, because the runtime imports this package and the
// handlers must not import the runtime.
type Metrics struct {
	JobsCompleted     *prometheus.CounterVec
	JobDuration       *prometheus.HistogramVec
	DeadLetter        *prometheus.CounterVec
	WebhookDeliveries *prometheus.CounterVec
	// WebhookOutcomes counts webhook delivery attempts by what the endpoint
	// did: DELIVERED or the attempt's error code (WEBHOOK_3XX, WEBHOOK_4XX,
	// WEBHOOK_5XX, WEBHOOK_TIMEOUT, …): a bounded set, unlike endpoints.
	WebhookOutcomes *prometheus.CounterVec
	// WebhookDeliveriesHeld counts deliveries snoozed by their endpoint's
	// circuit breaker (no POST, no attempt spent).
	WebhookDeliveriesHeld prometheus.Counter
	// BreakerTransitions counts circuit breaker transitions by the state
	// entered. A transition counter labelled by state (3 values) rather than
	// a per-endpoint state gauge: endpoint ids are unbounded. The number of
	// breakers open is a scrape-time gauge (BreakerCollector, from the
	// database) because only the database knows the cluster-wide state.
	BreakerTransitions *prometheus.CounterVec
	CompileDuration    prometheus.Histogram
	PayloadBytes       prometheus.Histogram
	ProofBytes         prometheus.Histogram
	ReceiptBytes       prometheus.Histogram
}

// NewMetrics creates the job metrics and registers them with reg. The
// webhook series of every delivery status and breaker state start at zero
// (see jobrun.Observer.Prime for why).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		JobsCompleted: f.NewCounterVec(prometheus.CounterOpts{
			Name: "bpc_jobs_completed_total",
			Help: "Job attempts finished, by type and the SSOT status they left the job in (QUEUED means a retry is scheduled).",
		}, []string{"type", "status"}),
		JobDuration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bpc_job_duration_seconds",
			Help:    "Duration of job attempts, by type.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"type"}),
		DeadLetter: f.NewCounterVec(prometheus.CounterOpts{
			Name: "bpc_jobs_dead_letter_total",
			Help: "Jobs that exhausted their attempts and were dead-lettered (River: discarded), by type.",
		}, []string{"type"}),
		WebhookDeliveries: f.NewCounterVec(prometheus.CounterOpts{
			Name: "bpc_webhook_deliveries_total",
			Help: "Webhook delivery attempts, by the delivery status they left (PENDING means a retry follows).",
		}, []string{"status"}),
		WebhookOutcomes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "bpc_webhook_attempt_outcomes_total",
			Help: "Webhook delivery attempts, by outcome: DELIVERED or the attempt's error code (WEBHOOK_3XX: a redirect, not followed).",
		}, []string{"outcome"}),
		WebhookDeliveriesHeld: f.NewCounter(prometheus.CounterOpts{
			Name: "bpc_webhook_deliveries_held_total",
			Help: "Webhook deliveries held (snoozed without POSTing) by their endpoint's open circuit breaker.",
		}),
		BreakerTransitions: f.NewCounterVec(prometheus.CounterOpts{
			Name: "bpc_webhook_breaker_transitions_total",
			Help: "Webhook endpoint circuit breaker transitions, by the state entered (OPEN, HALF_OPEN, CLOSED).",
		}, []string{"to"}),
		CompileDuration: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "bpc_compile_duration_seconds",
			Help:    "Duration of the pure compile (rules, proof, receipt) in COMPILE_PASSPORT.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		PayloadBytes: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "bpc_payload_bytes",
			Help:    "Canonical size of compiled passport payloads.",
			Buckets: prometheus.ExponentialBuckets(1024, 2, 8),
		}),
		ProofBytes: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "bpc_proof_bytes",
			Help:    "Canonical size of compiled proofs.",
			Buckets: prometheus.ExponentialBuckets(4096, 2, 7),
		}),
		ReceiptBytes: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "bpc_receipt_bytes",
			Help:    "Canonical size of unsigned receipts.",
			Buckets: prometheus.LinearBuckets(512, 512, 8),
		}),
	}
	for _, status := range []string{bpctype.DeliveryPending, bpctype.DeliveryDelivered, bpctype.DeliveryFailed} {
		m.WebhookDeliveries.WithLabelValues(status)
	}
	for _, o := range webhookOutcomes {
		m.WebhookOutcomes.WithLabelValues(o)
	}
	for _, state := range []string{bpctype.BreakerOpen, bpctype.BreakerHalfOpen, bpctype.BreakerClosed} {
		m.BreakerTransitions.WithLabelValues(state)
	}
	return m
}

// webhookOutcomes are the outcome label's values; any other error code
// counts as OTHER, so the label stays bounded whatever a delivery fails with.
var webhookOutcomes = []string{bpctype.DeliveryDelivered, string(errcode.Webhook3xx), string(errcode.Webhook4xx),
	string(errcode.Webhook5xx), string(errcode.WebhookTimeout), string(errcode.WebhookNetwork),
	string(errcode.WebhookDestinationDenied), "OTHER"}

// countOutcome counts a recorded delivery attempt by its outcome.
func (m *Metrics) countOutcome(a bpctype.DeliveryAttempt) {
	if m == nil || m.WebhookOutcomes == nil {
		return
	}
	o := bpctype.DeliveryDelivered
	if a.Status != bpctype.DeliveryDelivered {
		o = "OTHER"
		if slices.Contains(webhookOutcomes, a.ErrorCode) {
			o = a.ErrorCode
		}
	}
	m.WebhookOutcomes.WithLabelValues(o).Inc()
}

// observeCompile records a compile's duration and artifact sizes.
func (m *Metrics) observeCompile(d time.Duration, out compiler.Output) {
	if m == nil {
		return
	}
	m.CompileDuration.Observe(d.Seconds())
	m.PayloadBytes.Observe(float64(len(out.Payload)))
	m.ProofBytes.Observe(float64(len(out.Proof)))
	m.ReceiptBytes.Observe(float64(len(out.Receipt)))
}
