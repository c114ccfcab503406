package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkMirrorLastError measures the mirror's update trigger on River jobs
// that carry an attempt error, which it decodes into last_error on every
// update of the job (fetch, completion, retry), for each form the error text
// takes: none (the common case: bpc_last_error is not called), the typed
// error a worker stores, an error River writes itself (not typed) and a
// legacy "CODE: message" text. BPC_BENCH_ERROR_JOBS (20000) River jobs are
// updated in statements of 500 rows (the size of a River completion batch),
// BPC_BENCH_ROUNDS (3) times; the report is per updated row.
func BenchmarkMirrorLastError(b *testing.B) {
	skipUnlessBench(b)
	n := envInt("BPC_BENCH_ERROR_JOBS", 20_000)
	rounds := envInt("BPC_BENCH_ROUNDS", 3)
	const batch = 500
	forms := []struct{ name, text string }{
		{"none", ""},
		{"typed", `{"code":"SNAPSHOT_NOT_READY","message":"snapshot 5f0c2a57-5b4e-4f4e-9a51-1f7d1b0c9e21 is BUILDING, not READY"}`},
		{"river", "job kind is not registered in the client's Workers bundle: BENCH_UNKNOWN"},
		{"legacy", "SNAPSHOT_NOT_READY: snapshot 5f0c2a57-5b4e-4f4e-9a51-1f7d1b0c9e21 is BUILDING, not READY"},
	}
	for _, form := range forms {
		b.Run(form.name, func(b *testing.B) {
			ctx := context.Background()
			pool := schemaPool(b, true)
			_, err := pool.Exec(ctx, `INSERT INTO river_job (args, kind, max_attempts, priority, queue, state, attempt, attempted_at, errors)
				SELECT '{}', 'BENCH_NOOP', 5, 1, $2, 'retryable', 1, now(),
					CASE WHEN $3 = '' THEN NULL ELSE ARRAY[jsonb_build_object('at', now(), 'attempt', 1, 'error', $3::text, 'trace', '')] END
				FROM generate_series(1, $1)`, n, benchQueue, form.text)
			require.NoError(b, err)
			_, err = pool.Exec(ctx, `VACUUM ANALYZE river_job, jobs`)
			require.NoError(b, err)
			var first int64
			require.NoError(b, pool.QueryRow(ctx, `SELECT min(id) FROM river_job`).Scan(&first))
			var perRow []float64
			for range b.N {
				for range rounds {
					start := time.Now()
					for lo := first; lo < first+int64(n); lo += batch {
						// Reschedule: River's scheduler and retries touch these rows.
						_, err := pool.Exec(ctx, `UPDATE river_job SET scheduled_at = now()
							WHERE id >= $1 AND id < $1 + $2`, lo, batch)
						require.NoError(b, err)
					}
					perRow = append(perRow, float64(time.Since(start).Microseconds())/float64(n))
				}
			}
			if form.text != "" {
				var code string
				require.NoError(b, pool.QueryRow(ctx, `SELECT last_error->>'code' FROM jobs LIMIT 1`).Scan(&code))
				b.Logf("last_error.code: %s", code)
			}
			b.ReportMetric(median(perRow), "µs/row")
			b.Logf("%s: µs per updated row over %d rounds of %d rows: min %.2f, median %.2f, max %.2f",
				form.name, len(perRow), n, minOf(perRow), median(perRow), maxOf(perRow))
		})
	}
}

func minOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
