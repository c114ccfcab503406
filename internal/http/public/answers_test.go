package public_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/internal/fixture"
	"github.com/bpc-platform/bpc/internal/http/public"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/teststore"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// getOn sends a GET to h, a process of the service.
func getOn(t *testing.T, h http.Handler, target, accept string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// verdictOn is the verdict of version id's JSON from h.
func verdictOn(t *testing.T, h http.Handler, id uuid.UUID) string {
	t.Helper()
	rec := getOn(t, h, versionURL(id), "application/json")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	return qrVerification(t, rec.Body.Bytes())["verification"].(map[string]any)["verdict"].(string)
}

// revoke revokes the fixture's key (made the dev tenant's) as compromised
// since before it signed, as the API does: in a transaction of its own.
func (e env) revoke(t *testing.T) {
	t.Helper()
	compromised := e.active.Version.SignedAt.Add(-time.Minute)
	require.NoError(t, passport.InTx(e.Ctx, e.Store, e.River, "test", func(tx passport.Tx) error {
		_, err := passport.RevokeSigningKey(e.Ctx, tx, store.DevTenantID, "fixture-key",
			passport.Revocation{CompromisedAt: &compromised, Reason: "laptop stolen"}, time.Now())
		return err
	}))
}

// The page a QR code links to, its JSON and the version's other answers,
// asked again and again: after the first of each, no round trip to the
// database (the pool's tracer counts them) and no lookup; an unchanged
// answer revalidated is a 304 without the body, from memory too, and so is
// a link whose hashes differ (answered from the cached version).
func TestRepeatedScansDoNotTouchTheDatabase(t *testing.T) {
	t.Parallel()
	trips := &testdb.RoundTrips{}
	e := newEnvOn(t, teststore.On(t, testdb.NewWithOptions(t, testdb.Options{Tracer: trips})), "Pack")
	v := e.active.Version
	id := v.PassportVersionID
	link := linkPath(t, *v.QRPayload)
	forged := withHashes(t, id.String(), hash.SHA256Hex([]byte("forged")), v.ProofRootHash, v.ReceiptHash)
	requests := []struct{ target, accept string }{
		{link, browserAccept}, {link, "application/json"}, {"/p/" + id.String(), browserAccept},
		{versionURL(id), browserAccept}, {versionURL(id), "application/json"},
		{verifyURL(*v.QRPayload), browserAccept}, {verifyURL(*v.QRPayload), "application/json"},
		{forged, browserAccept}, {forged, "application/json"},
	}
	etags := make([]string, len(requests))
	for i, r := range requests {
		rec := e.get(t, r.target, r.accept)
		require.Equal(t, http.StatusOK, rec.Code, r.target)
		etags[i] = rec.Header().Get("ETag")
		require.NotEmpty(t, etags[i])
	}
	trips0, lookups0 := trips.Count(), e.answers.Lookups()
	require.Equal(t, int64(1), lookups0, "one lookup served every route")

	for range 10 {
		for i, r := range requests {
			rec := e.get(t, r.target, r.accept)
			require.Equal(t, http.StatusOK, rec.Code, r.target)
			require.Equal(t, etags[i], rec.Header().Get("ETag"), r.target)
			require.Equal(t, "public, max-age=0, s-maxage=60", rec.Header().Get("Cache-Control"))
			rec = e.get(t, r.target, r.accept, "If-None-Match", `"other", `+etags[i])
			require.Equal(t, http.StatusNotModified, rec.Code, r.target)
			require.Empty(t, rec.Body.Bytes())
		}
	}
	require.Contains(t, e.get(t, link, browserAccept).Body.String(), `id="verdict">VERIFIED`)
	require.Contains(t, e.get(t, forged, browserAccept).Body.String(), `id="verdict">NOT VERIFIED`)
	require.Equal(t, trips0, trips.Count(), "no round trip to the database after the first answers")
	require.Equal(t, lookups0, e.answers.Lookups())
}

// A process that commits a change drops its answers itself (Invalidate, as
// the API's routes do after committing): until then a cache that hears of
// nothing keeps the old answer, which is why it must be told. After the
// change the tenant's versions are read again from the primary within the
// primary window; and no answer outlives MaxAge.
func TestInvalidateAndMaxAge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	id := e.active.Version.PassportVersionID
	e.ownKey(t, store.DevTenantID)
	now := time.Now()
	var clock sync.Mutex
	answers := public.NewAnswers(public.AnswersConfig{MaxBytes: 8 << 20, MaxEntries: 100, MaxAge: 5 * time.Minute,
		Now: func() time.Time {
			clock.Lock()
			defer clock.Unlock()
			return now
		}})
	h := e.handler(answers) // not listening: hears only Invalidate
	require.Equal(t, verify.VerdictVerified, verdictOn(t, h, id))
	require.Equal(t, int64(1), answers.Lookups())

	e.revoke(t)
	require.Equal(t, verify.VerdictVerified, verdictOn(t, h, id), "a cache that was not told keeps its answer")
	answers.Invalidate(uuid.New()) // another tenant's change
	require.Equal(t, verify.VerdictVerified, verdictOn(t, h, id))
	require.Equal(t, int64(1), answers.Lookups())

	answers.Invalidate(store.DevTenantID)
	require.Equal(t, verify.VerdictNotVerified, verdictOn(t, h, id))
	require.Equal(t, int64(3), answers.Lookups(), "read, then read again from the primary: the tenant changed within the primary window")
	require.Equal(t, verify.VerdictNotVerified, verdictOn(t, h, id))
	require.Equal(t, int64(3), answers.Lookups(), "cached again")

	// Behind its back, the key is made valid again: the answer lives on
	// until MaxAge, then the version is read afresh (outside the window:
	// once).
	e.Exec(t, `UPDATE signing_keys SET status = 'active', revoked_at = NULL, compromised_at = NULL, revocation_reason = NULL
		WHERE key_id = 'fixture-key'`)
	clock.Lock()
	now = now.Add(5*time.Minute - time.Second)
	clock.Unlock()
	require.Equal(t, verify.VerdictNotVerified, verdictOn(t, h, id))
	clock.Lock()
	now = now.Add(time.Second)
	clock.Unlock()
	require.Equal(t, verify.VerdictVerified, verdictOn(t, h, id))
	require.Equal(t, int64(4), answers.Lookups())
}

// Two processes of the service cache the same answers. One revokes the
// key, clears the issuer's verification, supersedes the version: the other
// hears of each by the database's NOTIFY (Sync waits for it) and answers
// the change.
func TestAnotherProcessHearsTheChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack") // e.h: process A, listening
	id := e.active.Version.PassportVersionID
	e.ownKey(t, store.DevTenantID)
	other := public.NewAnswers(public.AnswersConfig{MaxBytes: 8 << 20, MaxEntries: 100, MaxAge: time.Hour})
	listen(t, other, e.Pool)
	b := e.handler(other) // process B
	require.Equal(t, verify.VerdictVerified, verdictOn(t, e.h, id))
	require.Equal(t, verify.VerdictVerified, verdictOn(t, b, id))
	page := getOn(t, b, linkPath(t, *e.active.Version.QRPayload), browserAccept)
	require.Contains(t, page.Body.String(), `id="verdict">VERIFIED`)

	e.revoke(t)
	e.answers.Invalidate(store.DevTenantID) // A, after its commit
	require.Equal(t, verify.VerdictNotVerified, verdictOn(t, e.h, id), "A at once")
	require.NoError(t, other.Sync(e.Ctx))
	require.Equal(t, verify.VerdictNotVerified, verdictOn(t, b, id), "B once the notification arrived")
	page = getOn(t, b, linkPath(t, *e.active.Version.QRPayload), browserAccept, "If-None-Match", page.Header().Get("ETag"))
	require.Equal(t, http.StatusOK, page.Code, "the old page's ETag no longer matches")
	require.Contains(t, page.Body.String(), "key validity: KEY_REVOKED")

	e.Exec(t, `UPDATE signing_keys SET status = 'active', revoked_at = NULL, compromised_at = NULL, revocation_reason = NULL
		WHERE key_id = 'fixture-key'`)
	require.NoError(t, other.Sync(e.Ctx))
	require.Equal(t, verify.VerdictVerified, verdictOn(t, b, id))

	fixture.Issuer(t, e.Store, e.River, store.DevTenantID, "Voltaris Battery Systems AG", false)
	require.NoError(t, other.Sync(e.Ctx))
	require.Equal(t, verify.VerdictIssuerNotVerified, verdictOn(t, b, id))

	e.Exec(t, `UPDATE passport_versions SET status = 'SUPERSEDED', superseded_at = now() WHERE passport_version_id = $1`, id)
	require.NoError(t, other.Sync(e.Ctx))
	require.Contains(t, getOn(t, b, versionURL(id), browserAccept).Body.String(), "A newer version of this passport has replaced this one")

	// A product renamed: its pages say the new name.
	e.Exec(t, `UPDATE battery_products SET name = 'Pack, renamed' WHERE battery_product_id = $1`, e.active.Product.BatteryProductID)
	require.NoError(t, other.Sync(e.Ctx))
	require.Contains(t, getOn(t, b, versionURL(id), browserAccept).Body.String(), "Pack, renamed")
}

// The cache holds at most MaxEntries versions and about MaxBytes; the
// least recently used go first, and an evicted version is read again.
func TestAnswersAreBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	ids := []uuid.UUID{e.active.Version.PassportVersionID}
	for i := range 3 {
		ids = append(ids, fixture.ActiveNMC811(t, e.Store, e.River, store.DevTenantID, fmt.Sprint("Pack ", i)).Version.PassportVersionID)
	}
	few := public.NewAnswers(public.AnswersConfig{MaxBytes: 8 << 20, MaxEntries: 2, MaxAge: time.Hour})
	h := e.handler(few)
	for _, id := range ids {
		require.Equal(t, verify.VerdictVerified, verdictOn(t, h, id))
		n, _ := few.Len()
		require.LessOrEqual(t, n, 2)
	}
	lookups := few.Lookups()
	verdictOn(t, h, ids[3]) // the most recent: cached
	require.Equal(t, lookups, few.Lookups())
	verdictOn(t, h, ids[0]) // evicted: read again
	require.Equal(t, lookups+1, few.Lookups())

	one := public.NewAnswers(public.AnswersConfig{MaxBytes: 1 << 30, MaxEntries: 100, MaxAge: time.Hour})
	verdictOn(t, e.handler(one), ids[0])
	_, size := one.Len()
	small := public.NewAnswers(public.AnswersConfig{MaxBytes: size + size/2, MaxEntries: 100, MaxAge: time.Hour})
	h = e.handler(small)
	for _, id := range ids {
		require.Equal(t, verify.VerdictVerified, verdictOn(t, h, id))
		n, bytes := small.Len()
		require.Equal(t, 1, n)
		require.LessOrEqual(t, bytes, size+size/2)
	}
}

// A herd of scans of a version not cached yet reads it once.
func TestConcurrentMissesLookUpOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	answers := public.NewAnswers(public.AnswersConfig{MaxBytes: 8 << 20, MaxEntries: 100, MaxAge: time.Hour})
	h := e.handler(answers)
	link := linkPath(t, *e.active.Version.QRPayload)
	start := make(chan struct{})
	etags := make([]string, 32)
	var wg sync.WaitGroup
	for i := range etags {
		wg.Go(func() {
			<-start
			req := httptest.NewRequest(http.MethodGet, link, nil)
			req.Header.Set("Accept", browserAccept)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code == http.StatusOK {
				etags[i] = rec.Header().Get("ETag")
			}
		})
	}
	close(start)
	wg.Wait()
	for _, etag := range etags {
		require.Equal(t, etags[0], etag)
	}
	require.NotEmpty(t, etags[0])
	require.Equal(t, int64(1), answers.Lookups())
}

// A scan of ids that are not published, or of a real id with forged
// hashes, keeps nothing: the cache neither grows nor loses the genuine
// answers.
func TestScansOfUnknownIdsAndForgedHashesKeepNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	v := e.active.Version
	genuine := linkPath(t, *v.QRPayload)
	require.Equal(t, http.StatusOK, e.get(t, genuine, browserAccept).Code)
	require.Equal(t, http.StatusOK, e.get(t, genuine, "application/json").Code)
	versions, bytes := e.answers.Len()
	lookups := e.answers.Lookups()

	for i := range 50 {
		require.Equal(t, http.StatusNotFound, e.get(t, "/p/"+uuid.NewString(), browserAccept).Code)
		forged := withHashes(t, v.PassportVersionID.String(), v.PayloadHash, hash.SHA256Hex([]byte(fmt.Sprint(i))), v.ReceiptHash)
		rec := e.get(t, forged, []string{browserAccept, "application/json"}[i%2])
		require.Equal(t, http.StatusOK, rec.Code)
		require.Contains(t, rec.Body.String(), "NOT")
	}
	n, b := e.answers.Len()
	require.Equal(t, versions, n)
	require.Equal(t, bytes, b, "no forged scan was kept")
	require.Equal(t, lookups+50, e.answers.Lookups(), "each unknown id was looked up; the forged links were not")
	require.Contains(t, e.get(t, genuine, browserAccept).Body.String(), `id="verdict">VERIFIED`)
}

// A listener that loses its connection drops every answer once it listens
// again: what changed meanwhile was not heard.
func TestLostConnectionDropsEverything(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	id := e.active.Version.PassportVersionID
	require.Equal(t, verify.VerdictVerified, e.version(t, id).Verification.Verdict)
	n, _ := e.answers.Len()
	require.Equal(t, 1, n)

	var schema string
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT current_schema()`).Scan(&schema))
	var killed int
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE query = 'LISTEN "' || $1 || '.bpc_public_answers"'`, schema).Scan(&killed))
	require.Equal(t, 1, killed)
	// Sync succeeds only on the new connection, after everything was
	// dropped (one sent before the old connection's end was noticed is
	// lost with it: try again).
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(e.Ctx, 2*time.Second)
		err := e.answers.Sync(ctx)
		cancel()
		if err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "the listener never listened again: %v", err)
		time.Sleep(50 * time.Millisecond)
	}
	n, _ = e.answers.Len()
	require.Equal(t, 0, n)
}

// A schema whose name is 50 bytes long has a channel for the answers'
// changes too: the triggers notify on it and another process hears them.
// ("<schema>.bpc_public_answers", migration 017's, was then 69 bytes:
// pg_notify refused it, failing the change itself, and LISTEN truncated
// it.) 50 bytes is as long as River allows the service's schema: its
// insert notifications' channel is "<schema>.river_insert". The channel
// is the schema's own whatever the length of a prefix two names share,
// up to Postgres' 63 bytes, and a short name's is as it was.
func TestChannelOfALongSchemaName(t *testing.T) {
	t.Parallel()
	pool := testdb.NewWithOptions(t, testdb.Options{SchemaNameBytes: 50})
	var schema string
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT current_schema()`).Scan(&schema))
	require.Len(t, schema, 50)
	e := newEnvOn(t, teststore.On(t, pool), "Pack")
	id := e.active.Version.PassportVersionID
	e.ownKey(t, store.DevTenantID)
	other := public.NewAnswers(public.AnswersConfig{MaxBytes: 8 << 20, MaxEntries: 100, MaxAge: time.Hour})
	listen(t, other, e.Pool)
	b := e.handler(other) // another process
	require.Equal(t, verify.VerdictVerified, verdictOn(t, b, id))

	e.revoke(t)
	require.NoError(t, other.Sync(e.Ctx))
	require.Equal(t, verify.VerdictNotVerified, verdictOn(t, b, id), "heard on the long schema's channel")

	channel := func(schema string) string {
		var c string
		require.NoError(t, pool.QueryRow(t.Context(), `SELECT bpc_public_answers_channel($1)`, schema).Scan(&c))
		require.LessOrEqual(t, len(c), 63, schema)
		return c
	}
	require.Equal(t, strings.Repeat("s", 44)+".bpc_public_answers", channel(strings.Repeat("s", 44)))
	require.NotEqual(t, channel(strings.Repeat("s", 45)), channel(strings.Repeat("s", 44)+"t"))
	long := strings.Repeat("s", 62)
	require.NotEqual(t, channel(long+"t"), channel(long+"u"))
}
