package public_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/qr"
	"github.com/bpc-platform/bpc/core/verify"
	"github.com/bpc-platform/bpc/internal/browser"
	"github.com/bpc-platform/bpc/internal/fixture"
	"github.com/bpc-platform/bpc/internal/http/public"
	"github.com/bpc-platform/bpc/internal/teststore"
	"github.com/bpc-platform/bpc/store"
)

// serviceBase is the test service's BPC_PUBLIC_BASE_URL: not the
// fixture's, under which its versions were issued (an earlier base).
const serviceBase = "https://passports.bpc.test"

type env struct {
	teststore.Env
	active  fixture.Active
	h       http.Handler
	answers *public.Answers
}

// cdnMaxAge is how long the test service lets a CDN hold an answer.
const cdnMaxAge = time.Minute

// listen runs answers' LISTEN loop for the test, and returns once it
// listens.
func listen(t testing.TB, answers *public.Answers, pool *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		answers.Listen(ctx, pool, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-answers.Listening():
	case <-time.After(time.Minute):
		t.Fatal("the public answers never listened for changes")
	}
}

// Exec changes rows behind the service's back, as another process or an
// operator would: the cached answers hear of it by the database's NOTIFY,
// and Exec returns once they have (Sync).
func (e env) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	e.Env.Exec(t, sql, args...)
	e.sync(t)
}

// sync waits until every change committed so far reached the cache.
func (e env) sync(t testing.TB) {
	t.Helper()
	require.NoError(t, e.answers.Sync(e.Ctx))
}

func newEnv(t testing.TB, productName string) env {
	t.Helper()
	return newEnvOn(t, teststore.New(t), productName)
}

// newEnvOn is newEnv on a store of the test's choosing.
func newEnvOn(t testing.TB, st teststore.Env, productName string) env {
	t.Helper()
	e := env{Env: st}
	e.active = fixture.ActiveNMC811(t, e.Store, e.River, store.DevTenantID, productName)
	fixture.Issuer(t, e.Store, e.River, store.DevTenantID, "Voltaris Battery Systems GmbH", true)
	e.answers = public.NewAnswers(public.AnswersConfig{MaxBytes: 8 << 20, MaxEntries: 100, MaxAge: time.Hour})
	listen(t, e.answers, e.Pool)
	e.h = e.handler(e.answers)
	return e
}

// handler is the public routes over e's store, caching in answers (nil:
// none): a process of the service.
func (e env) handler(answers *public.Answers) http.Handler {
	ph := &public.Handler{Store: e.Store, WriteError: writeError, Checks: public.NewChecks(16), Answers: answers, CDNMaxAge: cdnMaxAge,
		PublicBaseURL: func() string { return serviceBase }}
	r := chi.NewRouter()
	r.Get(public.PassportVersionPath, ph.PassportVersion)
	r.Get(public.VerifyPath, ph.Verify)
	r.Get(public.IssuerPath, ph.Issuer)
	r.Get(public.LinkPath, ph.Link)
	return r
}

// writeError answers an error as the API's envelope would, in short.
func writeError(w http.ResponseWriter, _ *http.Request, err error) {
	status := http.StatusInternalServerError
	switch errcode.CodeOf(err) {
	case errcode.NotFound:
		status = http.StatusNotFound
	case errcode.Validation:
		status = http.StatusUnprocessableEntity
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": errcode.CodeOf(err), "message": err.Error()}})
}

// get sends a GET to e's handler (getOn).
func (e env) get(t *testing.T, target, accept string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	return getOn(t, e.h, target, accept, header...)
}

func versionURL(id uuid.UUID) string { return "/public/v1/passport-versions/" + id.String() }

func verifyURL(qr string) string { return "/public/v1/verify?qr=" + url.QueryEscape(qr) }

func allTrue(t *testing.T, v public.Verification) {
	t.Helper()
	require.True(t, v.PayloadHashOK)
	require.True(t, v.ProofRootOK)
	require.True(t, v.ReceiptHashOK)
	require.True(t, v.SignatureOK)
	require.True(t, v.Verified, "%+v", v.Checks)
}

func TestActiveVersionVerifiesFromStoredBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack NMC811 75 kWh")
	id := e.active.Version.PassportVersionID

	v, err := public.Lookup(e.Ctx, e.Store, id)
	require.NoError(t, err)
	allTrue(t, v.Verification)
	require.Equal(t, bpctype.PassportActive, v.Status)
	require.Equal(t, "Pack NMC811 75 kWh", v.Product.Name)
	require.Equal(t, e.active.Version.PassportID, v.PassportID)
	require.Equal(t, e.active.Product.BatteryProductID, v.BatteryProductID)
	require.Equal(t, *e.active.Version.QRPayload, v.QRPayload)
	require.Equal(t, &public.VerifyingKey{KeyID: "fixture-key", Alg: "ED25519", PublicKeyBase64: e.active.Signer.PublicKeyBase64(), Status: bpctype.KeyActive}, v.SigningKey)
	require.True(t, json.Valid(v.Payload) && json.Valid(v.Receipt))

	// The same over HTTP, with the shape of SPEC §11.
	rec := e.get(t, versionURL(id), "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var body map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	for _, k := range []string{"passport_version_id", "passport_id", "battery_product_id", "status", "payload", "receipt", "signing_key", "qr_payload", "verification"} {
		require.Contains(t, body, k)
	}
	ver := body["verification"].(map[string]any)
	for _, k := range []string{"payload_hash_ok", "proof_root_ok", "receipt_hash_ok", "signature_ok", "verified"} {
		require.Equal(t, true, ver[k], k)
	}
}

func TestOnlyActiveAndSupersededVersionsArePublic(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	id := e.active.Version.PassportVersionID

	_, err := public.Lookup(e.Ctx, e.Store, uuid.New())
	require.Equal(t, errcode.NotFound, errcode.CodeOf(err))
	require.Equal(t, http.StatusNotFound, e.get(t, versionURL(uuid.New()), "").Code)
	require.Equal(t, http.StatusNotFound, e.get(t, "/public/v1/passport-versions/not-a-uuid", "").Code)

	e.Exec(t, `UPDATE passport_versions SET status = 'SUPERSEDED', superseded_at = now() WHERE passport_version_id = $1`, id)
	v, err := public.Lookup(e.Ctx, e.Store, id)
	require.NoError(t, err)
	require.Equal(t, bpctype.PassportSuperseded, v.Status)
	allTrue(t, v.Verification)
	page := e.get(t, versionURL(id), "text/html").Body.String()
	require.Contains(t, page, "A newer version of this passport has replaced this one")

	for _, status := range []string{bpctype.PassportSigned, bpctype.PassportCompiling} {
		e.Exec(t, `UPDATE passport_versions SET status = $2 WHERE passport_version_id = $1`, id, status)
		_, err = public.Lookup(e.Ctx, e.Store, id)
		require.Equal(t, errcode.NotFound, errcode.CodeOf(err), status)
		require.Equal(t, http.StatusNotFound, e.get(t, versionURL(id), "").Code, status)
	}
}

func TestTamperedStoredBytesDoNotVerify(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	id := e.active.Version.PassportVersionID
	// One byte of the stored payload changes (a digit of a value).
	e.Exec(t, `UPDATE passport_versions SET payload = overlay(payload placing '9'::bytea from position('"61.3"'::bytea in payload) + 1 for 1)
		WHERE passport_version_id = $1`, id)
	v, err := public.Lookup(e.Ctx, e.Store, id)
	require.NoError(t, err)
	require.False(t, v.Verification.PayloadHashOK)
	require.False(t, v.Verification.Verified)
	require.True(t, v.Verification.SignatureOK, "the receipt itself is intact: %+v", v.Verification.Checks)

	page := e.get(t, versionURL(id), "text/html").Body.String()
	require.Contains(t, page, "NOT VERIFIED")
	require.NotContains(t, page, ">VERIFIED<")
}

func TestSignatureNeedsTheRegisteredKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	id := e.active.Version.PassportVersionID
	// Another key registered under the id the receipt names: the copy on
	// the version does not count, the registered key does.
	other := fixture.SignerFor(t, e.Store, "other-key")
	e.Exec(t, `UPDATE signing_keys SET public_key_base64 = $1 WHERE key_id = 'fixture-key'`, other.PublicKeyBase64())
	v, err := public.Lookup(e.Ctx, e.Store, id)
	require.NoError(t, err)
	require.False(t, v.Verification.SignatureOK)
	require.False(t, v.Verification.Verified)

	e.Exec(t, `DELETE FROM signing_keys WHERE key_id = 'fixture-key'`)
	v, err = public.Lookup(e.Ctx, e.Store, id)
	require.NoError(t, err)
	require.Nil(t, v.SigningKey)
	require.False(t, v.Verification.SignatureOK)
	require.False(t, v.Verification.Verified)
}

func TestVerifyQR(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	id := e.active.Version.PassportVersionID
	good := *e.active.Version.QRPayload

	c, err := public.CheckQR(e.Ctx, e.Store, good, "")
	require.NoError(t, err)
	require.Equal(t, id, c.PassportVersionID)
	require.True(t, c.QRMatches)
	allTrue(t, c.Verification)
	require.True(t, verifyPassed(c.Verification, verify.CheckQRPNG), "the stored image renders the scanned payload")

	tampered := tamperQR(good)
	c, err = public.CheckQR(e.Ctx, e.Store, tampered, "")
	require.NoError(t, err)
	require.False(t, c.QRMatches)
	require.False(t, c.Verification.Verified)
	rec := e.get(t, verifyURL(tampered), "")
	require.Equal(t, http.StatusOK, rec.Code)
	var body map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	require.Equal(t, false, body["qr_matches"])
	require.Equal(t, false, body["verification"].(map[string]any)["verified"])
	page := e.get(t, verifyURL(tampered), "text/html,application/xhtml+xml,*/*;q=0.8").Body.String()
	require.Contains(t, page, "NOT VERIFIED")
	require.Contains(t, page, "This QR code does not match")

	// Not BPC-QR-1 → 422 naming qr; a well-formed one naming an unknown
	// version → 404.
	for _, bad := range []string{"", "hello", "BPC1|pv=x", good + "|", strings.Repeat("A", 5000)} {
		_, err := public.CheckQR(e.Ctx, e.Store, bad, "")
		if len(bad) <= 1024 {
			require.Equal(t, errcode.Validation, errcode.CodeOf(err), bad)
		}
		rec := e.get(t, verifyURL(bad), "")
		require.Equal(t, http.StatusUnprocessableEntity, rec.Code, bad)
		// One message, one code: the parameter qr and what is wrong with
		// it, not another error's code nested inside (the API's envelope
		// shows Message and Details: api's TestPublicVerifyBadQR).
		if len(bad) <= 1024 {
			_, err := public.CheckQR(e.Ctx, e.Store, bad, "")
			ee := errcode.As(err)
			require.NotNil(t, ee, bad)
			require.Equal(t, map[string]any{"field": "qr"}, ee.Details)
			require.True(t, strings.HasPrefix(ee.Message, "qr: is not a battery passport QR code (BPC-QR-1 or a BPC-QR-2 link): "), ee.Message)
			require.Equal(t, 1, strings.Count(ee.Message, "qr"), ee.Message)
			require.NotContains(t, ee.Message, "VALIDATION_ERROR")
		}
	}
	_, err = public.CheckQR(e.Ctx, e.Store, "hello", "")
	require.EqualError(t, err, fmt.Sprintf("VALIDATION_ERROR: qr: is not a battery passport QR code (BPC-QR-1 or a BPC-QR-2 link): must be %d bytes, got 5", qr.PayloadLen))
	unknown := strings.Replace(good, id.String(), uuid.NewString(), 1)
	require.Equal(t, http.StatusNotFound, e.get(t, verifyURL(unknown), "").Code)
	require.Equal(t, http.StatusNotFound, e.get(t, verifyURL(unknown), "text/html").Code)

	// A person who opens the verify page without a code, or sends the form
	// empty, gets the form: no verdict before anything was checked.
	for _, path := range []string{public.VerifyPath, verifyURL("")} {
		rec := e.get(t, path, "text/html,application/xhtml+xml,*/*;q=0.8")
		require.Equal(t, http.StatusOK, rec.Code, path)
		form := rec.Body.String()
		require.Contains(t, form, `<form method="get" action="/public/v1/verify">`, path)
		require.Contains(t, form, "<title>Check a battery passport QR code</title>", path)
		require.NotContains(t, form, "VERIFIED", path)
		require.Equal(t, http.StatusUnprocessableEntity, e.get(t, path, "").Code, "%s: a program asking for JSON is told qr is missing", path)
	}
}

func verifyPassed(v public.Verification, name string) bool {
	for _, c := range v.Checks {
		if c.Name == name {
			return c.OK
		}
	}
	return false
}

func TestPageForAPerson(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `Pack <script>alert(1)</script> & "co"`)
	id := e.active.Version.PassportVersionID

	rec := e.get(t, versionURL(id), "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "text/html; charset=utf-8", rec.Header().Get("Content-Type"))
	csp := rec.Header().Get("Content-Security-Policy")
	require.Contains(t, csp, "default-src 'none'")
	require.NotContains(t, csp, "script-src")
	page := rec.Body.String()
	require.Contains(t, page, `id="verdict">VERIFIED`)
	require.Contains(t, page, "Pack &lt;script&gt;alert(1)&lt;/script&gt; &amp; &#34;co&#34;", "the product name is escaped")
	require.NotContains(t, page, "<script")
	// Main fields and compliance results from the payload.
	require.Contains(t, page, "<h2>General</h2>")
	require.Contains(t, page, "ART8_RECYCLED_NICKEL")
	require.Contains(t, page, "not met")
	require.Contains(t, page, "61300 gCO2e/kWh")

	// The error page of an unknown version is a page, not JSON.
	rec = e.get(t, versionURL(uuid.New()), "text/html")
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.Contains(t, rec.Body.String(), "no published passport with this id")
	require.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
}

func TestCachingByETag(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	target := versionURL(e.active.Version.PassportVersionID)
	for _, accept := range []string{"application/json", "text/html"} {
		first := e.get(t, target, accept)
		require.Equal(t, http.StatusOK, first.Code)
		require.Equal(t, "public, max-age=0, s-maxage=60", first.Header().Get("Cache-Control"))
		require.Equal(t, "Accept", first.Header().Get("Vary"))
		etag := first.Header().Get("ETag")
		require.NotEmpty(t, etag)
		again := e.get(t, target, accept, "If-None-Match", etag)
		require.Equal(t, http.StatusNotModified, again.Code)
		require.Empty(t, again.Body.Bytes())
	}
	require.NotEqual(t, e.get(t, target, "application/json").Header().Get("ETag"), e.get(t, target, "text/html").Header().Get("ETag"))
}

// A person's view: Chromium loads the page of the sample passport and
// shows VERIFIED and the product's name; a tampered QR shows NOT VERIFIED.
func TestPageInABrowser(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "NMC811 pack 75 kWh")
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	ctx := browser.New(t)

	browser.Do(t, ctx, chromedp.Navigate(srv.URL+versionURL(e.active.Version.PassportVersionID)))
	verdict := browser.Value(t, ctx, chromedp.Text(chromedp.ID("verdict")))
	require.True(t, strings.HasPrefix(verdict, "VERIFIED"), verdict)
	require.Equal(t, "NMC811 pack 75 kWh", browser.Value(t, ctx, chromedp.Text(chromedp.ID("product"))))
	require.FileExists(t, browser.Screenshot(t, ctx, "passport.png"))

	good := *e.active.Version.QRPayload
	browser.Do(t, ctx, chromedp.Navigate(srv.URL+verifyURL(tamperQR(good))))
	verdict = browser.Value(t, ctx, chromedp.Text(chromedp.ID("verdict")))
	require.True(t, strings.HasPrefix(verdict, "NOT VERIFIED"), verdict)
	browser.Screenshot(t, ctx, "tampered.png")

	// The page's own form checks the genuine QR text.
	browser.Do(t, ctx,
		chromedp.SetValue(chromedp.ID("qr"), good),
		chromedp.Submit(chromedp.ID("qr")),
		chromedp.WaitVisible(chromedp.CSS("#verdict.ok")),
	)
	verdict = browser.Value(t, ctx, chromedp.Text(chromedp.ID("verdict")))
	require.True(t, strings.HasPrefix(verdict, "VERIFIED"), verdict)
}

// tamperQR changes one character of the QR's ph (still valid base32).
func tamperQR(good string) string {
	i := strings.Index(good, "ph=") + 3
	swap := byte('A')
	if good[i] == 'A' {
		swap = 'B'
	}
	return good[:i] + string(swap) + good[i+1:]
}

// TestRememberedVerificationsSeeChanges: the handler remembers
// verifications, yet a byte changed at rest, another registered key or a
// tampered QR string is verified afresh (each is another key), and the
// original bytes verify again.
func TestRememberedVerificationsSeeChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "Pack")
	id := e.active.Version.PassportVersionID
	verified := func() public.Verification {
		t.Helper()
		rec := e.get(t, versionURL(id), "application/json")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		var v public.VerifiedVersion
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &v))
		return v.Verification
	}
	for range 3 {
		allTrue(t, verified())
	}
	var proof []byte
	require.NoError(t, e.Store.DB().QueryRow(e.Ctx, `SELECT proof FROM passport_versions WHERE passport_version_id = $1`, id).Scan(&proof))
	e.Exec(t, `UPDATE passport_versions SET proof = overlay(proof placing '0'::bytea from position('"hash":"'::bytea in proof) + 8 for 1)
		WHERE passport_version_id = $1`, id)
	require.False(t, verified().ProofRootOK, "a proof byte changed after its verification was remembered")
	e.Exec(t, `UPDATE passport_versions SET proof = $2 WHERE passport_version_id = $1`, id, proof)
	allTrue(t, verified())

	other := fixture.SignerFor(t, e.Store, "other-key")
	original := e.active.Signer.PublicKeyBase64()
	e.Exec(t, `UPDATE signing_keys SET public_key_base64 = $1 WHERE key_id = 'fixture-key'`, other.PublicKeyBase64())
	require.False(t, verified().SignatureOK, "another key registered after the verification was remembered")
	e.Exec(t, `UPDATE signing_keys SET public_key_base64 = $1 WHERE key_id = 'fixture-key'`, original)
	allTrue(t, verified())
}

// BenchmarkPublicVersion is one public version's JSON through the handler,
// verified afresh on every request, remembered by Checks, and answered from
// Answers.
func BenchmarkPublicVersion(b *testing.B) {
	e := newEnv(b, "Pack")
	target := versionURL(e.active.Version.PassportVersionID)
	for _, tc := range []struct {
		name    string
		checks  *public.Checks
		answers *public.Answers
	}{{"afresh", nil, nil}, {"remembered", public.NewChecks(16), nil},
		{"cached", public.NewChecks(16), public.NewAnswers(public.AnswersConfig{})}} {
		h := &public.Handler{Store: e.Store, Checks: tc.checks, Answers: tc.answers}
		r := chi.NewRouter()
		r.Get(public.PassportVersionPath, h.PassportVersion)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}
