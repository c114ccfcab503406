package api

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// queueStates are the River states bpc_queue_depth reports (those of the
// query below): the jobs still to be worked or being worked.
var queueStates = []string{"available", "scheduled", "pending", "retryable", "running"}

// QueueCollector reports River's queue depth by state and the age of the
// oldest available job, read from the database at scrape time so that every
// replica reports the same truth.
//
// The service's own queues are reported even when empty (depth 0, age 0):
// a series that vanishes when a queue drains leaves dashboards with gaps
// and alert rules unable to tell "empty" from "not scraped".
type QueueCollector struct {
	Pool   *pgxpool.Pool
	Logger *slog.Logger
	// Queues are reported with zeros when they hold no jobs; other queues
	// (River UI's, a benchmark's) only while they do.
	Queues []string
	depth  *prometheus.Desc
	oldest *prometheus.Desc
}

// NewQueueCollector returns a collector over pool that always reports
// queues.
func NewQueueCollector(pool *pgxpool.Pool, logger *slog.Logger, queues ...string) *QueueCollector {
	return &QueueCollector{
		Pool:   pool,
		Logger: logger,
		Queues: queues,
		depth: prometheus.NewDesc("bpc_queue_depth", "River jobs by queue and state.",
			[]string{"queue", "state"}, nil),
		oldest: prometheus.NewDesc("bpc_queue_oldest_available_age_seconds",
			"Age of the oldest job that is available to work now, by queue (0 when none).", []string{"queue"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *QueueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	ch <- c.oldest
}

// queueStat is one queue's depth by state and oldest available age.
type queueStat struct {
	depth  map[string]int64
	oldest float64
}

// Collect implements prometheus.Collector.
func (c *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rows, err := c.Pool.Query(ctx, `SELECT queue, state::text, count(*),
			COALESCE(EXTRACT(EPOCH FROM now() - min(scheduled_at) FILTER (
				WHERE state = 'available' AND scheduled_at <= now())), 0)::float8
		FROM river_job
		WHERE state IN ('available', 'scheduled', 'pending', 'retryable', 'running')
		GROUP BY queue, state`)
	if err != nil {
		c.Logger.Warn("queue metrics unavailable", slog.String("error", err.Error()))
		return
	}
	defer rows.Close()
	stats := make(map[string]*queueStat, len(c.Queues))
	for _, q := range c.Queues {
		stats[q] = &queueStat{depth: map[string]int64{}}
	}
	for rows.Next() {
		var queue, state string
		var n int64
		var age float64
		if err := rows.Scan(&queue, &state, &n, &age); err != nil {
			c.Logger.Warn("queue metrics unavailable", slog.String("error", err.Error()))
			return
		}
		s := stats[queue]
		if s == nil {
			s = &queueStat{depth: map[string]int64{}}
			stats[queue] = s
		}
		s.depth[state] = n
		s.oldest = max(s.oldest, age)
	}
	if err := rows.Err(); err != nil {
		c.Logger.Warn("queue metrics unavailable", slog.String("error", err.Error()))
		return
	}
	for queue, s := range stats {
		for _, state := range queueStates {
			ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(s.depth[state]), queue, state)
		}
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, s.oldest, queue)
	}
}
