package api

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/http/access"
)

// A QR that is not BPC-QR-1 is one VALIDATION_ERROR naming the parameter
// qr, with one message that says what is wrong — not another error's code
// nested inside it. (Parsing fails before the store is read.)
func TestPublicVerifyBadQR(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	for bad, want := range map[string]string{
		"nope":      "qr: is not a battery passport QR code (BPC-QR-1 or a BPC-QR-2 link): must be 212 bytes, got 4",
		"BPC1|pv=x": "qr: is not a battery passport QR code (BPC-QR-1 or a BPC-QR-2 link): must be 212 bytes, got 9",
	} {
		rec := serve(h, http.MethodGet, "/public/v1/verify?qr="+url.QueryEscape(bad), "", false)
		require.Equal(t, http.StatusUnprocessableEntity, rec.Code, rec.Body.String())
		env := readEnvelope(t, rec)
		require.Equal(t, "VALIDATION_ERROR", env.Error.Code)
		require.Equal(t, want, env.Error.Message)
		require.Equal(t, map[string]any{"field": "qr"}, env.Error.Details)
	}
}

// No error of the public routes, nor any unmatched path, may be kept by a
// cache: a CDN in front of the QR pages that stored a 429 or a 404 would
// answer it to every scanner behind it. Every error says no-store: over
// the address limit (burst 1 here, a 429), a bad QR (422), an unmatched
// path under /public, under /v1 and anywhere else (404), a method the
// route does not serve (405).
func TestPublicErrorsAreNotCached(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Admin = true
	s.Limits = access.NewLimiter(0.001, 1)
	h := checked(t, s)

	first := serve(h, http.MethodGet, "/public/v1/verify?qr=nope", "", false)
	require.Equal(t, http.StatusUnprocessableEntity, first.Code)
	require.Equal(t, "no-store", first.Header().Get("Cache-Control"))
	limited := serve(h, http.MethodGet, "/public/v1/verify?qr=nope", "", false)
	require.Equal(t, http.StatusTooManyRequests, limited.Code, limited.Body.String())
	require.Equal(t, "RATE_LIMITED", readEnvelope(t, limited).Error.Code)
	require.NotEmpty(t, limited.Header().Get("Retry-After"))
	require.Equal(t, "no-store", limited.Header().Get("Cache-Control"))
	// The QR links' pages share the public routes' address limit.
	link := serve(h, http.MethodGet, "/p/"+uuid.NewString()+"?ph=A", "", false)
	require.Equal(t, http.StatusTooManyRequests, link.Code, link.Body.String())
	require.Equal(t, "no-store", link.Header().Get("Cache-Control"))

	for _, tt := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/public/v1/nothing", http.StatusNotFound},
		{http.MethodGet, "/public/v1/passport-versions/" + uuid.NewString() + "/nothing", http.StatusNotFound},
		{http.MethodGet, "/nothing", http.StatusNotFound},
		{http.MethodHead, "/public/nothing", http.StatusNotFound},
		{http.MethodGet, "/v1/nothing", http.StatusNotFound},
		{http.MethodPost, "/public/v1/verify", http.StatusMethodNotAllowed},
		{http.MethodGet, "/p/", http.StatusNotFound},
		{http.MethodPost, "/p/" + uuid.NewString(), http.StatusMethodNotAllowed},
	} {
		rec := serve(h, tt.method, tt.path, "", false)
		require.Equal(t, tt.status, rec.Code, "%s %s: %s", tt.method, tt.path, rec.Body.String())
		require.Equal(t, "no-store", rec.Header().Get("Cache-Control"), "%s %s", tt.method, tt.path)
	}
}
