package jobrun

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/store"
)

// MaintenanceMetrics are the maintenance jobs' metrics.
type MaintenanceMetrics struct {
	// MirrorDrift is the drift count of the last consistency check. Only the
	// node that ran the check sets it; alert on max over nodes together with
	// MirrorChecked.
	MirrorDrift prometheus.Gauge
	// MirrorChecked is when the last consistency check finished.
	MirrorChecked prometheus.Gauge
	// RetentionDeleted counts SSOT job rows deleted by retention.
	RetentionDeleted prometheus.Counter
}

// NewMaintenanceMetrics creates the maintenance metrics and registers them with reg.
func NewMaintenanceMetrics(reg prometheus.Registerer) *MaintenanceMetrics {
	f := promauto.With(reg)
	return &MaintenanceMetrics{
		MirrorDrift: f.NewGauge(prometheus.GaugeOpts{
			Name: "bpc_mirror_drift",
			Help: "Disagreements between River's jobs and the SSOT jobs table found by the last consistency check on this node.",
		}),
		MirrorChecked: f.NewGauge(prometheus.GaugeOpts{
			Name: "bpc_mirror_drift_checked_timestamp_seconds",
			Help: "Unix time of the last consistency check on this node (0: none yet).",
		}),
		RetentionDeleted: f.NewCounter(prometheus.CounterOpts{
			Name: "bpc_retention_jobs_deleted_total",
			Help: "SSOT job rows deleted by retention (finished, past BPC_RETENTION_JOBS_DAYS, River row gone).",
		}),
	}
}

// BreakerCollector reports bpc_webhook_breakers_open: the endpoints whose
// breaker holds deliveries (OPEN or HALF_OPEN), read from the database at
// scrape time so that every replica reports the cluster's truth.
//
// Why not a gauge bpc_webhook_breaker_state{endpoint_id}: endpoints are
// created by tenants without bound, and a label per endpoint makes the
// series count grow with them (and never shrink in Prometheus' retention).
// The per-endpoint state is in the API (GET /v1/webhook-endpoints/{id});
// metrics carry the bounded aggregate, by state, plus
// bpc_webhook_breaker_transitions_total{to} in Metrics.
type BreakerCollector struct {
	Store  *store.Queries
	Logger *slog.Logger
	open   *prometheus.Desc
}

// NewBreakerCollector returns a collector over st; register it once per
// process (workers or API).
func NewBreakerCollector(st *store.Queries, logger *slog.Logger) *BreakerCollector {
	return &BreakerCollector{Store: st, Logger: logger,
		open: prometheus.NewDesc("bpc_webhook_breakers_open",
			"Webhook endpoints whose circuit breaker holds deliveries, by state (OPEN, HALF_OPEN), cluster-wide.",
			[]string{"state"}, nil)}
}

// Describe implements prometheus.Collector.
func (c *BreakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.open }

// Collect implements prometheus.Collector.
func (c *BreakerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := c.Store.CountWebhookBreakers(ctx)
	if err != nil {
		if c.Logger != nil {
			c.Logger.Warn("webhook breaker metrics unavailable", slog.String("error", err.Error()))
		}
		return
	}
	for _, state := range []string{bpctype.BreakerOpen, bpctype.BreakerHalfOpen} {
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(counts[state]), state)
	}
}
