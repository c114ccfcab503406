package workers

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"sort"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/audit"
	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/webhook/breaker"
	"github.com/bpc-platform/bpc/internal/webhook/destination"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// responseBodyTimeout bounds the read of a response's body once its
// headers came: 4 KiB that do not arrive in 2 s are being trickled.
const responseBodyTimeout = 2 * time.Second

// Bounds on what is kept of an endpoint's response.
const (
	maxResponseBodyBytes = 4096
	maxResponseHeaders   = 32
	maxHeaderValueBytes  = 512
)

// Headers of BPC-WH-1.
const (
	HeaderSignature  = "X-BPC-Signature"
	HeaderEventType  = "X-BPC-Event-Type"
	HeaderDeliveryID = "X-BPC-Delivery-Id"
)

// DeliverWebhookWorker POSTs an event to an endpoint (BPC-WH-1): the body is
// the canonical JSON of the event, signed with HMAC-SHA256 of the endpoint's
// secret over the exact body bytes. 2xx delivers; network errors, timeouts,
// 5xx, 408 and 429 are retried; a 3xx (WEBHOOK_3XX, not followed) and any
// other status fail the delivery at once.
type DeliverWebhookWorker struct {
	river.WorkerDefaults[jobargs.DeliverWebhookArgs]
	Store   *store.Queries
	Client  *http.Client
	Metrics *Metrics
	// RequestTimeout bounds one POST (BPC_WEBHOOK_TIMEOUT_MS); the client's
	// transport bounds its phases inside it (Timeouts).
	RequestTimeout time.Duration
	// Breaker tunes the endpoints' circuit breaker; zero fields take
	// breaker.DefaultConfig's values.
	Breaker breaker.Config
	// Logger receives breaker transitions (slog.Default when nil).
	Logger *slog.Logger
}

// Timeout gives River's job timeout headroom over the HTTP timeout so that
// a slow endpoint ends as WEBHOOK_TIMEOUT, not as a cancelled job.
func (w *DeliverWebhookWorker) Timeout(*river.Job[jobargs.DeliverWebhookArgs]) time.Duration {
	return w.RequestTimeout + 10*time.Second
}

// Work delivers one webhook.
func (w *DeliverWebhookWorker) Work(ctx context.Context, job *river.Job[jobargs.DeliverWebhookArgs]) error {
	if err := job.Args.Validate(); err != nil {
		return err
	}
	tenantID, deliveryID := job.Args.TenantID, job.Args.WebhookDeliveryID
	d, err := w.Store.LoadDeliveryToSend(ctx, tenantID, deliveryID)
	if err != nil {
		return err
	}
	if d.Delivery.Status == bpctype.DeliveryDelivered {
		// Already delivered (a retried job after a crash past the POST, or a
		// manual re-run): receivers dedupe on X-BPC-Delivery-Id, but there
		// is nothing left to do.
		return nil
	}
	if d.Endpoint.DeletedAt != nil || !d.Endpoint.IsActive {
		err := errcode.New(errcode.InvalidState, "webhook endpoint %s is deleted or inactive", d.Endpoint.WebhookEndpointID)
		return w.record(ctx, job, d, bpctype.DeliveryAttempt{Status: bpctype.DeliveryFailed, ErrorCode: string(err.Code), ErrorMessage: err.Message, At: time.Now()}, err, nil)
	}

	body, err := Body(d.Event)
	if err != nil {
		return err
	}
	// An open circuit breaker holds the delivery: a snooze spends no
	// attempt and the delivery stays PENDING (package breaker). An
	// operator's retry is its probe at once.
	hold, probe, err := w.admit(ctx, d, operatorAttempt(job.JobRow))
	if err != nil {
		return err
	}
	if hold > 0 {
		return river.JobSnooze(hold)
	}
	attempt, sendErr := w.send(ctx, d, body)
	outcome := breaker.Classify(true, sendErr)
	if ctx.Err() != nil {
		// Cut short by this process (shutdown, lost lease, cancel): no
		// verdict on the endpoint. A probe is released for the next delivery.
		outcome = breaker.OutcomeNone
	}
	note := &breakerNote{outcome: outcome, probe: probe}
	attempt.At = time.Now()
	switch {
	case sendErr == nil:
		attempt.Status = bpctype.DeliveryDelivered
	case errcode.As(sendErr).Retryable() && job.Attempt < job.MaxAttempts:
		attempt.Status = bpctype.DeliveryPending
	default:
		attempt.Status = bpctype.DeliveryFailed
	}
	if sendErr != nil {
		e := errcode.As(sendErr)
		attempt.ErrorCode, attempt.ErrorMessage = string(e.Code), e.Message
	}
	return w.record(ctx, job, d, attempt, sendErr, note)
}

// record stores the attempt, and what it says about the endpoint's health
// on its circuit breaker (note; nil when nothing was sent), and returns the
// job's error. A delivered webhook completes its job in the same transaction
// as the DELIVERED row, so the two can never disagree; the breaker's row is
// updated in that transaction too.
func (w *DeliverWebhookWorker) record(ctx context.Context, job *river.Job[jobargs.DeliverWebhookArgs], d store.DeliveryToSend,
	a bpctype.DeliveryAttempt, jobErr error, note *breakerNote,
) error {
	w.Metrics.WebhookDeliveries.WithLabelValues(a.Status).Inc()
	w.Metrics.countOutcome(a)
	// Record even when the job's context was cancelled by a timeout.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var t *breaker.Transition
	err := w.Store.InTx(ctx, func(tx pgx.Tx) error {
		if err := w.Store.WithTx(tx).RecordDeliveryAttempt(ctx, job.Args.TenantID, job.Args.WebhookDeliveryID, a); err != nil {
			return err
		}
		if note != nil && (note.outcome != breaker.OutcomeNone || note.probe) {
			var err error
			if t, err = w.Breaker.WithDefaults().Record(ctx, w.Store.WithTx(tx), breakerRef(d), note.outcome); err != nil {
				return err
			}
		}
		if jobErr == nil {
			// Fencing, as in the pipeline handlers: an attempt that lost its
			// lease records nothing; the attempt holding it delivers again
			// (receivers dedupe on X-BPC-Delivery-Id).
			if err := w.Store.WithTx(tx).FenceLease(ctx, job.ID, job.Attempt); err != nil {
				return err
			}
			if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
				return fmt.Errorf("error completing job: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return errcode.Wrap(errcode.DBUnavailable, err, "error recording webhook delivery: %s", err.Error())
	}
	if t != nil {
		w.reportTransition(ctx, *t)
	}
	return jobErr
}

// breakerNote is what a delivery attempt tells its endpoint's breaker.
type breakerNote struct {
	outcome breaker.Outcome
	probe   bool // the delivery was admitted as the probe
}

// breakerRef names d to its endpoint's breaker.
func breakerRef(d store.DeliveryToSend) breaker.Ref {
	return breaker.Ref{TenantID: d.Delivery.TenantID, EndpointID: d.Endpoint.WebhookEndpointID,
		DeliveryID: d.Delivery.WebhookDeliveryID}
}

// admit consults the endpoint's breaker before a POST. operator is true
// for the attempt an operator's retry asked for. It returns how long to
// hold the delivery (0: send it) and whether it is the probe, and logs and
// counts what the consultation changed.
func (w *DeliverWebhookWorker) admit(ctx context.Context, d store.DeliveryToSend, operator bool) (time.Duration, bool, error) {
	cfg := w.Breaker.WithDefaults()
	dec, err := cfg.Check(ctx, w.Store, breakerRef(d), operator, cfg.ProbeLease(w.RequestTimeout))
	if err != nil {
		return 0, false, err
	}
	if dec.Claimed {
		attrs := []any{slog.String("webhook_endpoint_id", d.Endpoint.WebhookEndpointID.String()),
			slog.String("webhook_delivery_id", d.Delivery.WebhookDeliveryID.String())}
		switch {
		case dec.Early:
			w.logger().InfoContext(ctx, "webhook breaker probe sent before the cool-down: an operator retried the delivery",
				append(attrs, slog.Time("cooldown_until", dec.CooldownUntil))...)
		case dec.Transition == nil:
			w.logger().InfoContext(ctx, "webhook breaker probe taken over", attrs...)
		}
		if dec.Transition != nil {
			w.reportTransition(ctx, *dec.Transition)
		}
	}
	if dec.Hold > 0 && w.Metrics != nil && w.Metrics.WebhookDeliveriesHeld != nil {
		w.Metrics.WebhookDeliveriesHeld.Inc()
	}
	return dec.Hold, dec.Probe, nil
}

// operatorAttempt reports whether job's attempt is the one an operator's
// retry asked for (bpctype.LastOperatorRetry).
func operatorAttempt(job *rivertype.JobRow) bool {
	r, ok := bpctype.LastOperatorRetry(job.Metadata)
	return ok && r.IsOperatorAttempt(job.Attempt)
}

// reportTransition logs a committed transition and counts it. The endpoint's
// URL and secret are not logged.
func (w *DeliverWebhookWorker) reportTransition(ctx context.Context, t breaker.Transition) {
	attrs := []slog.Attr{
		slog.String("webhook_endpoint_id", t.EndpointID.String()),
		slog.String("tenant_id", t.TenantID.String()),
		slog.String("from", t.From),
		slog.String("to", t.To),
		slog.Float64("failure_rate", t.FailureRate()),
		slog.Int("attempts_in_window", t.Attempts),
	}
	if t.NextProbeAt != nil {
		attrs = append(attrs, slog.Time("next_probe_at", *t.NextProbeAt))
	}
	level := slog.LevelInfo
	if t.To == bpctype.BreakerOpen {
		level = slog.LevelWarn
	}
	w.logger().LogAttrs(ctx, level, "webhook breaker transition", attrs...)
	if w.Metrics != nil && w.Metrics.BreakerTransitions != nil {
		w.Metrics.BreakerTransitions.WithLabelValues(t.To).Inc()
	}
}

func (w *DeliverWebhookWorker) logger() *slog.Logger {
	if w.Logger != nil {
		return w.Logger
	}
	return slog.Default()
}

// send POSTs body and classifies the outcome. The attempt carries what was
// learnt of the response.
func (w *DeliverWebhookWorker) send(ctx context.Context, d store.DeliveryToSend, body []byte) (bpctype.DeliveryAttempt, error) {
	var a bpctype.DeliveryAttempt
	ctx, cancel := context.WithTimeout(ctx, w.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.Endpoint.URL, bytes.NewReader(body))
	if err != nil {
		return a, errcode.New(errcode.Validation, "webhook endpoint URL is invalid")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "bpc-webhooks/1")
	req.Header.Set(HeaderSignature, Sign([]byte(d.Endpoint.Secret), body))
	req.Header.Set(HeaderEventType, d.Event.EventType)
	req.Header.Set(HeaderDeliveryID, d.Delivery.WebhookDeliveryID.String())

	// Whether a connection was had tells a failure to connect (the dial or
	// the TLS handshake: WEBHOOK_NETWORK) from an endpoint that took the
	// request and did not answer in time (WEBHOOK_TIMEOUT).
	var connected atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
	}))
	resp, err := w.Client.Do(req)
	if err != nil {
		return a, w.transportError(ctx, d, err, connected.Load())
	}
	defer resp.Body.Close()
	// The body is kept for the record only (its first 4 KiB): a receiver
	// that sends its headers and then trickles the body would otherwise
	// hold the worker to the POST's total. Closing the body ends the read.
	bodyDeadline := time.AfterFunc(responseBodyTimeout, func() { _ = resp.Body.Close() })
	respBody, readErr := io.ReadAll(io.LimitReader(resp.Body, maxResponseBodyBytes))
	bodyDeadline.Stop()
	status := resp.StatusCode
	a.HTTPStatus = &status
	a.ResponseHeaders = boundedHeaders(resp.Header)
	a.ResponseBody = respBody

	switch {
	case status >= 200 && status < 300:
		if readErr != nil {
			// The endpoint accepted the event; a slow or broken body does
			// not undo that, and a part of it is not what it said.
			a.ResponseBody = nil
		}
		return a, nil
	case status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests:
		return a, errcode.New(errcode.Webhook5xx, "endpoint answered HTTP %d", status)
	case status >= 300 && status < 400:
		// Its own outcome: the receiver's URL is misconfigured (moved, or
		// behind a login), which the tenant fixes; the Location stays in the
		// recorded response headers.
		return a, errcode.New(errcode.Webhook3xx, "endpoint answered HTTP %d; redirects are not followed: register the URL it redirects to", status)
	default:
		return a, errcode.New(errcode.Webhook4xx, "endpoint answered HTTP %d", status)
	}
}

// connectFailed is the one message of every WEBHOOK_NETWORK failure. The
// cause (refused, unreachable, DNS, TLS, reset) goes to the log only: told
// apart in the delivery, which the tenant reads, they would make the
// service a port scanner of whatever it can reach.
const connectFailed = "could not connect to the webhook endpoint"

// transportError classifies a request that got no HTTP response: refused
// by the destination policy (nothing was sent), failed to connect (connected
// false: refused, unreachable, or no connection within the connect
// timeout), or timed out once connected (no response headers within the
// response-header timeout, or the total timeout); the detail is logged,
// never recorded. A connect timeout is WEBHOOK_NETWORK like a refusal:
// told apart, "filtered" from "closed" would be the port scanner's answer.
func (w *DeliverWebhookWorker) transportError(ctx context.Context, d store.DeliveryToSend, err error, connected bool) error {
	attrs := []any{slog.String("webhook_endpoint_id", d.Endpoint.WebhookEndpointID.String()),
		slog.String("webhook_delivery_id", d.Delivery.WebhookDeliveryID.String())}
	var denied *destination.DeniedError
	if errors.As(err, &denied) {
		w.logger().WarnContext(ctx, "webhook destination denied; nothing sent", append(attrs,
			slog.String("host", denied.Host), slog.String("address", addrString(denied)), slog.String("reason", denied.Reason))...)
		return errcode.Wrap(errcode.WebhookDestinationDenied, err,
			"the webhook endpoint's address is not allowed (%s); nothing was sent", denied.Reason)
	}
	var netErr net.Error
	timedOut := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
	if timedOut && connected {
		w.logger().InfoContext(ctx, "webhook endpoint timed out", append(attrs, slog.String("error", redactURL(err)))...)
		if ctx.Err() != nil {
			return errcode.New(errcode.WebhookTimeout, "no response within %s", w.RequestTimeout)
		}
		return errcode.New(errcode.WebhookTimeout, "the endpoint took the request but sent no response headers in time")
	}
	w.logger().InfoContext(ctx, "webhook endpoint unreachable", append(attrs, slog.String("error", redactURL(err)))...)
	return errcode.New(errcode.WebhookNetwork, connectFailed)
}

func addrString(d *destination.DeniedError) string {
	if d.Addr.IsValid() {
		return d.Addr.String()
	}
	return ""
}

// Body is the BPC-WH-1 request body of an event: canonical JSON, so that the
// bytes, and hence the signature, are the same on every attempt.
func Body(ev bpctype.Event) ([]byte, error) {
	b, err := canonjson.Marshal(map[string]any{
		"event_id":       ev.EventID.String(),
		"event_type":     ev.EventType,
		"aggregate_type": ev.AggregateType,
		"aggregate_id":   ev.AggregateID.String(),
		"occurred_at":    ev.OccurredAt.UTC().Format(audit.TimeFormat),
		"tenant_id":      ev.TenantID.String(),
		"payload":        json.RawMessage(ev.Payload),
	})
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "error encoding webhook body: %s", err.Error())
	}
	return b, nil
}

// Sign returns the X-BPC-Signature value: "sha256=" + hex HMAC-SHA256(secret, body).
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// boundedHeaders keeps the first value of at most maxResponseHeaders headers.
func boundedHeaders(h http.Header) map[string]string {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make(map[string]string, min(len(names), maxResponseHeaders))
	for _, name := range names[:min(len(names), maxResponseHeaders)] {
		v := h.Get(name)
		if len(v) > maxHeaderValueBytes {
			v = v[:maxHeaderValueBytes]
		}
		out[name] = v
	}
	return out
}

// redactURL keeps the error's cause without the URL, which may carry credentials.
func redactURL(err error) string {
	var urlErr interface{ Unwrap() error }
	if errors.As(err, &urlErr) {
		if inner := urlErr.Unwrap(); inner != nil {
			return inner.Error()
		}
	}
	return err.Error()
}

// NewHTTPClient returns a webhook client that allows private destinations,
// as dev and test do (their receivers listen on 127.0.0.1); the service
// builds its client with NewPolicyHTTPClient from BPC_WEBHOOK_ALLOW_PRIVATE.
func NewHTTPClient() *http.Client {
	return NewPolicyHTTPClient(&destination.Policy{AllowPrivate: true})
}

// NewPolicyHTTPClient returns the client webhooks are sent with, with the
// default phase timeouts (NewWebhookHTTPClient).
func NewPolicyHTTPClient(policy *destination.Policy) *http.Client {
	return NewWebhookHTTPClient(policy, DefaultTimeouts)
}
