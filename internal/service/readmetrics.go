package service

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bpc-platform/bpc/store"
)

// readCollector exports the read router's state: which target served the
// routed reads and why (bpc_db_reads_total), whether the replica serves
// now, and its lag.
type readCollector struct {
	router  *store.ReadRouter
	reads   *prometheus.Desc
	serving *prometheus.Desc
	lag     *prometheus.Desc
}

func newReadCollector(r *store.ReadRouter) *readCollector {
	return &readCollector{
		router: r,
		reads: prometheus.NewDesc("bpc_db_reads_total",
			"Read-routed queries (public verification, list routes) by the database that served them (replica, primary) and why it did (replica_healthy, primary_wanted, replica_unchecked, replica_lagging, replica_down, replica_not_standby, replica_error, not_replayed, replica_primary_down, replica_too_large).",
			[]string{"target", "reason"}, nil),
		serving: prometheus.NewDesc("bpc_db_read_replica_serving",
			"1 while the read replica serves the routed reads, 0 while they go to the primary.", nil, nil),
		lag: prometheus.NewDesc("bpc_db_read_replica_lag_seconds",
			"The read replica's lag behind the primary at the last check: the age of the oldest primary WAL position it had not replayed.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *readCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.reads
	ch <- c.serving
	ch <- c.lag
}

// Collect implements prometheus.Collector.
func (c *readCollector) Collect(ch chan<- prometheus.Metric) {
	c.router.Reads(func(target, reason string, n int64) {
		ch <- prometheus.MustNewConstMetric(c.reads, prometheus.CounterValue, float64(n), target, reason)
	})
	serving := 0.0
	if target, _ := c.router.Route(); target == store.TargetReplica {
		serving = 1
	}
	ch <- prometheus.MustNewConstMetric(c.serving, prometheus.GaugeValue, serving)
	ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, c.router.Lag().Seconds())
}
