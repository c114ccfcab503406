package api

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// QueueCollector reports River's queue depth by state and the age of the
// oldest available job, read from the database at scrape time so that every
// replica reports the same truth.
type QueueCollector struct {
	Pool   *pgxpool.Pool
	Logger *slog.Logger
	depth  *prometheus.Desc
	oldest *prometheus.Desc
}

// NewQueueCollector returns a collector over pool.
func NewQueueCollector(pool *pgxpool.Pool, logger *slog.Logger) *QueueCollector {
	return &QueueCollector{
		Pool:   pool,
		Logger: logger,
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
	oldest := map[string]float64{}
	for rows.Next() {
		var queue, state string
		var n int64
		var age float64
		if err := rows.Scan(&queue, &state, &n, &age); err != nil {
			c.Logger.Warn("queue metrics unavailable", slog.String("error", err.Error()))
			return
		}
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(n), queue, state)
		oldest[queue] = max(oldest[queue], age)
	}
	for queue, age := range oldest {
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age, queue)
	}
}
