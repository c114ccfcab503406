package cli

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/workers"
)

func TestWebhookEchoVerifiesSignatures(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		ctx, cancel := context.WithCancel(t.Context())
		var out, errOut syncBuffer
		args := []string{"--addr", "127.0.0.1:0", "--secret", testSecret}
		if fail {
			args = append(args, "--fail")
		}
		done := make(chan error, 1)
		go func() { done <- cmdWebhookEcho(ctx, args, env{stdout: &out, stderr: &errOut}) }()
		addr := regexp.MustCompile(`http://[0-9.:]+`)
		require.Eventually(t, func() bool { return addr.MatchString(errOut.String()) }, testTimeout, pollEvery)
		url := addr.FindString(errOut.String())

		body := `{"event_id":"e1","payload":{}}`
		post := func(sig string) int {
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			req.Header.Set("X-BPC-Signature", sig)
			req.Header.Set("X-BPC-Delivery-Id", "d-1")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			return resp.StatusCode
		}
		want := http.StatusNoContent
		if fail {
			want = http.StatusInternalServerError
		}
		require.Equal(t, want, post(workers.Sign([]byte(testSecret), []byte(body))))
		require.Equal(t, http.StatusUnauthorized, post(workers.Sign([]byte("another-secret-0123"), []byte(body))))
		require.Contains(t, out.String(), "delivery=d-1")
		require.Contains(t, out.String(), "signature_ok=true")
		require.Contains(t, out.String(), "signature_ok=false")

		// The walk-through's readiness probe (curl http://$HOOK/) is
		// answered 200 and logged as a probe, not as a delivery.
		deliveries := out.String()
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			req, _ := http.NewRequest(method, url+"/", nil)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, method)
			require.Contains(t, errOut.String(), "probe "+method+" / answered 200 (not a delivery")
		}
		require.Equal(t, deliveries, out.String(), "a probe is not printed as a delivery")
		// An unsigned POST is still refused, and printed.
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		require.Equal(t, 3, strings.Count(out.String(), "delivery="), out.String())
		require.Equal(t, 2, strings.Count(out.String(), "signature_ok=false"), out.String())
		req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
		cancel()
		require.NoError(t, <-done)
	}
}
