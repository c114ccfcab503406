// Package testriver builds River clients for tests: an insert-only client
// (what the API role runs) and the service's worker client over a test's
// schema, with the registered workers, started for the test and stopped
// when it ends (or left to a benchmark that times them).
package testriver

import (
	"cmp"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/jobrun"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

// Inserter returns an insert-only River client on pool: it enqueues jobs in
// a caller's transaction and works none.
func Inserter(t testing.TB, pool *pgxpool.Pool) *river.Client[pgx.Tx] {
	t.Helper()
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	return client
}

// Options configure New and Start.
type Options struct {
	// Client configures the River client. Zero fields take the values of a
	// fast test: ID "test", 4 workers per queue, a 20 ms poll, a 1 ms
	// backoff unit, 5 attempts. New sets Work, Logger, Workers and
	// Observer.
	Client jobrun.ClientOptions
	// Deps are the workers' dependencies; Store, Logger (discarding),
	// Metrics (on a fresh registry), HTTPClient, WebhookTimeout (5 s) and
	// Keys (under passport.TestKeyEncryptionKey, no legacy key) and
	// PublicBaseURL are filled in when zero.
	Deps workers.Deps
	// Register adds the workers; workers.Register when nil.
	Register func(w *river.Workers, d workers.Deps)
	// Leases, when set, is the observer's lease keeper; its Store and
	// Logger are filled in when nil. The caller runs it.
	Leases *jobrun.Leases
}

// PublicBaseURL is the base of the QR codes' links the workers render in
// tests that set none.
const PublicBaseURL = "https://passports.bpc.test"

// Start builds the service's River client working every queue with the
// registered workers on pool (New), starts it with the test's context and
// stops it when the test ends. It returns the client and the dependencies
// the workers got.
func Start(t testing.TB, pool *pgxpool.Pool, o Options) (*river.Client[pgx.Tx], workers.Deps) {
	t.Helper()
	client, d := New(t, pool, o)
	require.NoError(t, client.Start(t.Context()))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	})
	return client, d
}

// New builds the client Start starts, and leaves starting and stopping it
// to the caller (a benchmark times both).
func New(t testing.TB, pool *pgxpool.Pool, o Options) (*river.Client[pgx.Tx], workers.Deps) {
	t.Helper()
	d := o.Deps
	if d.Store == nil {
		d.Store = store.New(pool)
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Metrics == nil {
		d.Metrics = workers.NewMetrics(prometheus.NewRegistry())
	}
	if d.HTTPClient == nil {
		d.HTTPClient = workers.NewHTTPClient()
	}
	if d.Keys == nil {
		keys, err := passport.NewKeyring(passport.TestKeyEncryptionKey(), nil)
		require.NoError(t, err)
		d.Keys = keys
	}
	if d.WebhookTimeout == 0 {
		d.WebhookTimeout = 5 * time.Second
	}
	if d.PublicBaseURL == nil {
		d.PublicBaseURL = func() string { return PublicBaseURL }
	}
	if o.Leases != nil && o.Leases.Store == nil {
		o.Leases.Store = d.Store
	}
	if o.Leases != nil && o.Leases.Logger == nil {
		o.Leases.Logger = d.Logger
	}
	register := o.Register
	if register == nil {
		register = workers.Register
	}
	w := river.NewWorkers()
	register(w, d)
	c := o.Client
	c.ID = cmp.Or(c.ID, "test")
	c.Concurrency = cmp.Or(c.Concurrency, 4)
	c.PollInterval = cmp.Or(c.PollInterval, 20*time.Millisecond)
	c.BackoffUnit = cmp.Or(c.BackoffUnit, time.Millisecond)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, 5)
	c.Work, c.Logger, c.Workers = true, d.Logger, w
	c.Observer = &jobrun.Observer{Logger: d.Logger, Metrics: d.Metrics, Leases: o.Leases}
	client, err := jobrun.NewClient(pool, c)
	require.NoError(t, err)
	return client, d
}

// RequireConsistent asserts that the SSOT jobs mirror River's jobs:
// store.CheckConsistency finds no drift.
func RequireConsistent(t testing.TB, st *store.Queries) {
	t.Helper()
	rep, err := st.CheckConsistency(context.Background())
	require.NoError(t, err)
	require.True(t, rep.OK(), "drift: %+v", rep.Drifts)
}
