package bpctype

import (
	"time"

	"github.com/google/uuid"
)

// Circuit breaker states of a webhook endpoint.
const (
	// BreakerClosed lets every delivery through.
	BreakerClosed = "CLOSED"
	// BreakerOpen holds the endpoint's deliveries until next_probe_at.
	BreakerOpen = "OPEN"
	// BreakerHalfOpen lets one probe delivery through and holds the rest.
	BreakerHalfOpen = "HALF_OPEN"
)

// BreakerStates lists every circuit breaker state.
var BreakerStates = []string{BreakerClosed, BreakerOpen, BreakerHalfOpen}

// BreakerWindow is a breaker's ring of time buckets as stored: slot i
// counts the delivery attempts and failures of bucket Buckets[i] (unix
// milliseconds / BucketWidth). webhook/breaker.Window counts in it.
type BreakerWindow struct {
	BucketWidth time.Duration
	Buckets     []int64
	Attempts    []int32
	Failures    []int32
}

// WebhookBreaker is the circuit breaker of one webhook endpoint, shared by
// every worker process through its row in webhook_endpoint_breakers.
type WebhookBreaker struct {
	WebhookEndpointID uuid.UUID
	TenantID          uuid.UUID
	State             string
	Window            BreakerWindow
	// Attempts and Failures are the window's totals as of UpdatedAt.
	Attempts        int32
	Failures        int32
	OpenedAt        *time.Time
	NextProbeAt     *time.Time
	ProbeDeliveryID *uuid.UUID
	UpdatedAt       time.Time
	// Stored is false when the endpoint has no row yet: CLOSED, nothing counted.
	Stored bool
}
