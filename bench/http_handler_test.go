package bench

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/jobrun"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// BenchmarkEnqueueHandler runs POST /v1/jobs and POST /v1/jobs:batch (1000
// jobs) through the admin API's handler in this goroutine, without a
// network between client and server, so that its allocations and CPU per
// request are the server's alone (BenchmarkHTTPEnqueue's include the HTTP
// client's and River's side).
func BenchmarkEnqueueHandler(b *testing.B) {
	skipUnlessBench(b)
	pool := testdb.NewWithOptions(b, testdb.Options{MaxConns: 4})
	client, err := jobrun.NewClient(pool, jobrun.ClientOptions{ID: "bench-api", Logger: quiet, MaxAttempts: 5, BackoffUnit: time.Second, PollInterval: time.Second})
	require.NoError(b, err)
	handler := benchAPI(store.New(pool), client).Handler()
	post := func(path string, body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+benchToken)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec
	}
	deliveryID := benchDelivery(b, pool, func(body []byte) (*http.Response, error) {
		return post("/v1/events", body).Result(), nil
	})
	job := map[string]any{
		"type": jobargs.KindDeliverWebhook, "tenant_id": store.DevTenantID,
		"payload": map[string]any{"webhook_delivery_id": deliveryID},
	}
	single, err := json.Marshal(job)
	require.NoError(b, err)
	jobs := make([]map[string]any, 1000)
	for i := range jobs {
		jobs[i] = job
	}
	batch, err := json.Marshal(map[string]any{"jobs": jobs})
	require.NoError(b, err)

	for _, c := range []struct {
		name, path string
		body       []byte
	}{{"single", "/v1/jobs", single}, {"batch1000", "/v1/jobs:batch", batch}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if rec := post(c.path, c.body); rec.Code != http.StatusCreated {
					b.Fatalf("POST %s: %d %s", c.path, rec.Code, rec.Body)
				}
			}
		})
	}
}
