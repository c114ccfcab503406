-- Circuit breakers of webhook endpoints (issue 5): one row per endpoint that
-- has seen a delivery attempt, shared by every worker process of the cluster
-- (workers/breaker.go). No row means CLOSED with an empty window.
--
-- The window is a ring of per-bucket counters over the last `window` of
-- attempts: slot i counts the bucket bucket_ids[i] (unix milliseconds /
-- bucket_ms); a slot whose bucket is older than the window counts nothing and
-- is reused. attempts and failures are the window's totals as of updated_at
-- (the API recomputes them from the ring at read time, as they age out).
--
-- The row is updated once per delivery attempt, in the transaction that
-- records the attempt, so fillfactor leaves room for HOT updates: no indexed
-- column changes on those updates.
CREATE TABLE webhook_endpoint_breakers (
    webhook_endpoint_id uuid PRIMARY KEY REFERENCES webhook_endpoints (webhook_endpoint_id) ON DELETE CASCADE,
    tenant_id           uuid NOT NULL REFERENCES tenants (tenant_id),
    state               text NOT NULL DEFAULT 'CLOSED' CHECK (state IN ('CLOSED', 'OPEN', 'HALF_OPEN')),
    bucket_ms           integer NOT NULL CHECK (bucket_ms > 0),
    bucket_ids          bigint[] NOT NULL,
    bucket_attempts     integer[] NOT NULL,
    bucket_failures     integer[] NOT NULL,
    attempts            integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    failures            integer NOT NULL DEFAULT 0 CHECK (failures BETWEEN 0 AND attempts),
    -- When the breaker left CLOSED (kept while it alternates OPEN/HALF_OPEN).
    opened_at           timestamptz,
    -- OPEN: when a probe may go; HALF_OPEN: when the probe's claim lapses
    -- (its worker died) and another delivery may take it over.
    next_probe_at       timestamptz,
    -- The delivery that holds the probe (HALF_OPEN). A soft reference:
    -- deliveries are never deleted, and a dangling id only lapses.
    probe_delivery_id   uuid,
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT webhook_endpoint_breakers_ring CHECK (
        cardinality(bucket_ids) = cardinality(bucket_attempts)
        AND cardinality(bucket_ids) = cardinality(bucket_failures)),
    CONSTRAINT webhook_endpoint_breakers_state CHECK (
        (state = 'CLOSED' AND opened_at IS NULL AND next_probe_at IS NULL AND probe_delivery_id IS NULL)
        OR (state = 'OPEN' AND opened_at IS NOT NULL AND next_probe_at IS NOT NULL AND probe_delivery_id IS NULL)
        OR (state = 'HALF_OPEN' AND opened_at IS NOT NULL AND next_probe_at IS NOT NULL AND probe_delivery_id IS NOT NULL))
) WITH (fillfactor = 50);

CREATE INDEX webhook_endpoint_breakers_tenant_idx ON webhook_endpoint_breakers (tenant_id);
