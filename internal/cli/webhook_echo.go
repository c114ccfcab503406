package cli

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// cmdWebhookEcho runs a small webhook receiver for trying the service out:
// it verifies each delivery's X-BPC-Signature the way a customer would and
// prints what arrived. With --fail it answers 500 to exercise retries.
func cmdWebhookEcho(ctx context.Context, args []string, e env) error {
	stdout, stderr := e.stdout, e.stderr
	fs := flags("webhook-echo")
	addr := fs.String("addr", "127.0.0.1:9999", "listen address")
	secret := fs.String("secret", "", "the endpoint's secret (required)")
	fail := fs.Bool("fail", false, "answer 500 to every delivery")
	if help, err := parse(fs, args, e); help || err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *secret == "" {
		return errors.New("--secret is required")
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("error listening on %s: %w", *addr, err)
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			// A readiness probe (the README waits for the receiver with
			// curl): deliveries are signed POSTs, so this is not a failed one.
			fmt.Fprintf(stderr, "%s probe %s %s answered 200 (not a delivery; deliveries are signed POSTs)\n",
				time.Now().UTC().Format(time.RFC3339), r.Method, r.URL.Path)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			if r.Method == http.MethodGet {
				fmt.Fprintln(w, "bpc webhook-echo is listening; POST signed deliveries here")
			}
			return
		case http.MethodPost:
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			http.Error(w, "deliveries are POSTs", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		mac := hmac.New(sha256.New, []byte(*secret))
		mac.Write(body)
		expected := hex.EncodeToString(mac.Sum(nil))
		provided := strings.TrimPrefix(r.Header.Get("X-BPC-Signature"), "sha256=")
		verified := hmac.Equal([]byte(expected), []byte(provided))
		fmt.Fprintf(stdout, "%s delivery=%s event_type=%s signature_ok=%t body=%s\n",
			time.Now().UTC().Format(time.RFC3339), r.Header.Get("X-BPC-Delivery-Id"),
			r.Header.Get("X-BPC-Event-Type"), verified, body)
		switch {
		case !verified:
			http.Error(w, "bad signature", http.StatusUnauthorized)
		case *fail:
			http.Error(w, "failing on purpose (--fail)", http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})}
	fmt.Fprintf(stderr, "webhook-echo listening on http://%s (answers %s)\n", ln.Addr(), map[bool]string{true: "500", false: "204"}[*fail])
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
