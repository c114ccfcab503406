package api

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// A QR that is not BPC-QR-1 is one VALIDATION_ERROR naming the parameter
// qr, with one message that says what is wrong — not another error's code
// nested inside it. (Parsing fails before the store is read.)
func TestPublicVerifyBadQR(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	for bad, want := range map[string]string{
		"nope":      "qr: is not a BPC-QR-1 payload: must be 212 bytes, got 4",
		"BPC1|pv=x": "qr: is not a BPC-QR-1 payload: must be 212 bytes, got 9",
	} {
		rec := serve(h, http.MethodGet, "/public/v1/verify?qr="+url.QueryEscape(bad), "", false)
		require.Equal(t, http.StatusUnprocessableEntity, rec.Code, rec.Body.String())
		env := readEnvelope(t, rec)
		require.Equal(t, "VALIDATION_ERROR", env.Error.Code)
		require.Equal(t, want, env.Error.Message)
		require.Equal(t, map[string]any{"field": "qr"}, env.Error.Details)
	}
}
