package breaker

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// Ref names one delivery to an endpoint: the breaker consulted is the
// endpoint's.
type Ref struct {
	TenantID, EndpointID, DeliveryID uuid.UUID
}

// Decision is the breaker's answer for one delivery about to POST.
type Decision struct {
	// Hold is how long to snooze the delivery (0: POST it now), jitter
	// included.
	Hold time.Duration
	// Probe: the delivery POSTs as the breaker's probe.
	Probe bool
	// Claimed: this delivery won the claim of the probe just now. Early:
	// before the cool-down ended (an operator's retry), which was due at
	// CooldownUntil.
	Claimed, Early bool
	CooldownUntil  time.Time
	// Transition is the change the claim made (to HALF_OPEN), nil when the
	// claim took over a lapsed probe.
	Transition *Transition
}

// Check decides whether r's delivery may POST: it reads the endpoint's
// breaker, decides with Admit (AdmitOperatorRetry when operator is set: the
// attempt an operator's retry asked for) and, when that asks for it, claims
// the probe for probeLease (ProbeLease). The claim is its own statement: a
// Transition in the decision is committed.
func (c Config) Check(ctx context.Context, q *store.Queries, r Ref, operator bool, probeLease time.Duration) (Decision, error) {
	if c.Disabled {
		return Decision{}, nil
	}
	decide := c.Admit
	if operator {
		decide = c.AdmitOperatorRetry
	}
	b, err := q.GetWebhookBreaker(ctx, r.TenantID, r.EndpointID)
	if err != nil {
		return Decision{}, errcode.Wrap(errcode.DBUnavailable, err, "error reading webhook breaker: %s", err.Error())
	}
	now := time.Now()
	adm := decide(b, r.DeliveryID, now)
	if adm.Claim {
		won, after, err := q.ClaimWebhookBreakerProbe(ctx, r.TenantID, r.EndpointID, b.State,
			r.DeliveryID, now, now.Add(probeLease), adm.Early)
		if err != nil {
			return Decision{}, errcode.Wrap(errcode.DBUnavailable, err, "error claiming webhook breaker probe: %s", err.Error())
		}
		if won {
			d := Decision{Probe: true, Claimed: true, Early: adm.Early, Transition: transition(b, after, now)}
			if adm.Early {
				d.CooldownUntil = *b.NextProbeAt
			}
			return d, nil
		}
		adm = decide(after, r.DeliveryID, now)
		if adm.Claim { // lost to a claim that has not lapsed yet by our clock
			adm = Admission{Hold: minHold}
		}
	}
	if adm.Allow {
		return Decision{Probe: adm.Probe}, nil
	}
	// Jitter spreads the wake-ups of many held deliveries (an operator's,
	// held for a short recheck, by a tenth of it).
	jitter := c.Cooldown / 10
	if operator {
		jitter = min(jitter, adm.Hold/10)
	}
	return Decision{Hold: adm.Hold + rand.N(jitter+1)}, nil
}

// Record applies outcome o of r's POST to the endpoint's breaker with q,
// bound to the transaction that records the attempt, and wakes held
// deliveries when the breaker closes. It returns the transition, if any,
// for the caller to report once that transaction commits.
func (c Config) Record(ctx context.Context, q *store.Queries, r Ref, o Outcome) (*Transition, error) {
	if c.Disabled {
		return nil, nil
	}
	now := time.Now()
	before, after, err := q.UpdateWebhookBreaker(ctx, r.TenantID, r.EndpointID,
		func(b bpctype.WebhookBreaker) (bpctype.WebhookBreaker, bool) { return c.Next(b, r.DeliveryID, o, now) })
	if err != nil {
		return nil, err
	}
	t := transition(before, after, now)
	if t != nil && t.To == bpctype.BreakerClosed {
		if _, err := q.WakeHeldWebhookDeliveries(ctx, r.EndpointID, jobargs.QueueWebhooks, jobargs.KindDeliverWebhook, now, wakeLimit); err != nil {
			return nil, err
		}
	}
	return t, nil
}
