package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/http/access"
	"github.com/bpc-platform/bpc/internal/http/api"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// BenchmarkAuthenticatedRead measures what a tenant API key costs a request
// next to the platform token: the same read (GET /v1/documents/{id}, one
// indexed lookup answering 404) through the whole router in process, in
// alternating rounds of BPC_BENCH_AUTH_REQUESTS requests each (2000), so
// that neither side runs on a warmer or quieter machine. The key's row is
// read from Postgres once per Fresh (500 ms); the rate limit is off on both
// sides. Reports min/median/max µs per request of each side.
func BenchmarkAuthenticatedRead(b *testing.B) {
	skipUnlessBench(b)
	pool := testdb.New(b)
	st := store.New(pool)
	const token = benchToken
	srv := benchAPI(st, testriver.Inserter(b, pool))
	srv.Keys, srv.Access = access.NewKeyring(st), api.NewAccessMetrics(prometheus.NewRegistry())
	h := srv.Handler()
	var key passport.CreatedKey
	require.NoError(b, passport.InTx(context.Background(), st, srv.River, "bench", func(t passport.Tx) error {
		var err error
		key, err = passport.CreateAPIKey(context.Background(), t, passport.DefaultQuotas(), passport.NewKey{TenantID: store.DevTenantID, Name: "bench", Role: "reader"}, time.Now())
		return err
	}))
	path := "/v1/documents/" + uuid.NewString()
	sides := []struct {
		name, path, token string
	}{
		{"platform", path + "?tenant_id=" + store.DevTenantID.String(), token},
		{"key", path, key.Token},
	}
	n := envInt("BPC_BENCH_AUTH_REQUESTS", 2000)
	rounds := 5
	perReq := map[string][]float64{}
	for b.Loop() {
		for r := range rounds {
			for i := range sides {
				s := sides[(i+r)%len(sides)] // alternate which side goes first
				start := time.Now()
				for range n {
					req := httptest.NewRequest(http.MethodGet, s.path, nil)
					req.Header.Set("Authorization", "Bearer "+s.token)
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusNotFound {
						b.Fatalf("%s: %d %s", s.name, rec.Code, rec.Body)
					}
				}
				perReq[s.name] = append(perReq[s.name], float64(time.Since(start).Microseconds())/float64(n))
			}
		}
	}
	for _, s := range sides {
		xs := perReq[s.name]
		slices.Sort(xs)
		b.ReportMetric(xs[0], s.name+"-min-µs/req")
		b.ReportMetric(median(xs), s.name+"-median-µs/req")
		b.ReportMetric(xs[len(xs)-1], s.name+"-max-µs/req")
		b.Logf("%s: %d rounds of %d requests, µs/request min %.1f median %.1f max %.1f", s.name, len(xs), n, xs[0], median(xs), xs[len(xs)-1])
	}
}
