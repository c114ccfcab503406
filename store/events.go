package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
)

const eventColumns = `event_id, tenant_id, aggregate_type, aggregate_id, aggregate_version, event_type,
	occurred_at, actor_id, payload, payload_hash, prev_event_hash, event_hash`

// Head is where an aggregate's event chain ends: the version and event hash
// of its last event, 0 and nil when it has none.
type Head struct {
	Version int64
	Hash    *string
}

const chainHeadSQL = `SELECT aggregate_version, event_hash FROM events
	WHERE tenant_id = $1 AND aggregate_type = $2 AND aggregate_id = $3
	ORDER BY aggregate_version DESC LIMIT 1`

// ChainHead returns the version and event hash of the last event of an
// aggregate's chain: 0 and nil when it has none.
func (q *Queries) ChainHead(ctx context.Context, tenantID uuid.UUID, aggregateType string, aggregateID uuid.UUID) (int64, *string, error) {
	var h Head
	err := scanChainHead(q.db.QueryRow(ctx, chainHeadSQL, tenantID, aggregateType, aggregateID), aggregateType, aggregateID, &h)
	return h.Version, h.Hash, err
}

// queueChainHead queues ChainHead's statement on b; dst holds its answer
// once b has run.
func queueChainHead(b *pgx.Batch, tenantID uuid.UUID, aggregateType string, aggregateID uuid.UUID, dst *Head) {
	b.Queue(chainHeadSQL, tenantID, aggregateType, aggregateID).QueryRow(func(row pgx.Row) error {
		return scanChainHead(row, aggregateType, aggregateID, dst)
	})
}

func scanChainHead(row pgx.Row, aggregateType string, aggregateID uuid.UUID, dst *Head) error {
	err := row.Scan(&dst.Version, &dst.Hash)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("error reading aggregate %s %s head: %w", aggregateType, aggregateID, err)
	}
	return nil
}

// InsertEvent inserts ev, whose hashes the caller computed, and returns in
// the same round trip the tenant's endpoints to deliver it to: every active
// one subscribed to its type (or to '*'), or only deliverTo when set,
// whatever the subscriptions say. Another event inserted at ev's version
// first is EVENT_VERSION_CONFLICT (retryable); an unknown tenant NOT_FOUND.
func (q *Queries) InsertEvent(ctx context.Context, ev bpctype.Event, deliverTo *uuid.UUID) ([]uuid.UUID, error) {
	endpointsSQL := `SELECT DISTINCT e.webhook_endpoint_id
		FROM webhook_subscriptions s
		JOIN webhook_endpoints e ON e.webhook_endpoint_id = s.webhook_endpoint_id
		WHERE s.tenant_id = $2 AND (s.event_type = $6 OR s.event_type = '*')
			AND e.tenant_id = $2 AND e.is_active AND e.deleted_at IS NULL
		ORDER BY e.webhook_endpoint_id`
	args := []any{ev.EventID, ev.TenantID, ev.AggregateType, ev.AggregateID, ev.AggregateVersion, ev.EventType,
		ev.OccurredAt, ev.ActorID, []byte(ev.Payload), ev.PayloadHash, ev.PrevEventHash, ev.EventHash}
	if deliverTo != nil {
		endpointsSQL = `SELECT webhook_endpoint_id FROM webhook_endpoints
			WHERE tenant_id = $2 AND webhook_endpoint_id = $13 AND deleted_at IS NULL`
		args = append(args, *deliverTo)
	}
	endpoints, err := collect(ctx, q.db, "endpoints to deliver to", pgx.RowTo[uuid.UUID], `WITH appended AS (
			INSERT INTO events (`+eventColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12))
		`+endpointsSQL, args...)
	switch {
	case IsUniqueViolation(err, "events_aggregate_version_uniq"):
		return nil, errcode.Wrap(errcode.EventVersionConflict, err,
			"aggregate %s %s was appended to concurrently", ev.AggregateType, ev.AggregateID)
	case IsForeignKeyViolation(err):
		return nil, errcode.New(errcode.NotFound, "tenant %s not found", ev.TenantID)
	case err != nil:
		return nil, fmt.Errorf("error appending event: %w", err)
	}
	return endpoints, nil
}

// CreateDeliveries inserts one PENDING delivery of event eventID per ref.
func (q *Queries) CreateDeliveries(ctx context.Context, tenantID, eventID uuid.UUID, refs []bpctype.DeliveryRef) error {
	for _, ref := range refs {
		if _, err := q.db.Exec(ctx, `INSERT INTO webhook_deliveries
			(webhook_delivery_id, tenant_id, webhook_endpoint_id, event_id, job_id)
			VALUES ($1, $2, $3, $4, $5)`,
			ref.WebhookDeliveryID, tenantID, ref.WebhookEndpointID, eventID, ref.JobID); err != nil {
			return fmt.Errorf("error creating webhook delivery: %w", err)
		}
	}
	return nil
}

// GetEvent returns the tenant's event.
func (q *Queries) GetEvent(ctx context.Context, tenantID, eventID uuid.UUID) (bpctype.Event, error) {
	return getOne[bpctype.Event](ctx, q.db, "event", eventID,
		`SELECT `+eventColumns+` FROM events WHERE tenant_id = $1 AND event_id = $2`, tenantID, eventID)
}

// ChainEvents returns the tenant's events in chain order: by aggregate,
// then version.
func (q *Queries) ChainEvents(ctx context.Context, tenantID uuid.UUID) ([]bpctype.Event, error) {
	return list[bpctype.Event](ctx, q.db, "events of tenant "+tenantID.String(), `SELECT `+eventColumns+` FROM events
		WHERE tenant_id = $1 ORDER BY aggregate_type, aggregate_id, aggregate_version`, tenantID)
}
