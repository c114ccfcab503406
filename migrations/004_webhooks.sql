-- Webhook endpoints, their event subscriptions and one delivery row per
-- (event, endpoint). Endpoints are soft-deleted so that deliveries keep
-- their history.
CREATE TABLE webhook_endpoints (
    webhook_endpoint_id uuid PRIMARY KEY,
    tenant_id           uuid NOT NULL REFERENCES tenants (tenant_id),
    url                 text NOT NULL CHECK (length(url) <= 2048),
    -- The HMAC secret. Never returned by the API and never logged.
    secret              text NOT NULL CHECK (length(secret) BETWEEN 16 AND 512),
    is_active           boolean NOT NULL DEFAULT true,
    created_at          timestamptz NOT NULL DEFAULT now(),
    deleted_at          timestamptz
);

CREATE INDEX webhook_endpoints_tenant_idx ON webhook_endpoints (tenant_id, created_at);

CREATE TABLE webhook_subscriptions (
    webhook_subscription_id uuid PRIMARY KEY,
    tenant_id               uuid NOT NULL REFERENCES tenants (tenant_id),
    webhook_endpoint_id     uuid NOT NULL REFERENCES webhook_endpoints (webhook_endpoint_id) ON DELETE CASCADE,
    -- An event type, or '*' for every event of the tenant.
    event_type              text NOT NULL CHECK (event_type = '*' OR event_type ~ '^[A-Za-z][A-Za-z0-9_.-]{0,127}$'),
    created_at              timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT webhook_subscriptions_uniq UNIQUE (webhook_endpoint_id, event_type)
);

CREATE INDEX webhook_subscriptions_fanout_idx ON webhook_subscriptions (tenant_id, event_type);

CREATE TABLE webhook_deliveries (
    webhook_delivery_id uuid PRIMARY KEY,
    tenant_id           uuid NOT NULL REFERENCES tenants (tenant_id),
    webhook_endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (webhook_endpoint_id),
    event_id            uuid NOT NULL REFERENCES events (event_id),
    job_id              uuid,
    status              text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
    attempts            integer NOT NULL DEFAULT 0,
    http_status         integer,
    response_headers    jsonb,
    response_body       bytea,
    error_code          text,
    error_message       text,
    last_attempt_at     timestamptz,
    delivered_at        timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT webhook_deliveries_event_endpoint_uniq UNIQUE (event_id, webhook_endpoint_id)
);

CREATE INDEX webhook_deliveries_tenant_idx ON webhook_deliveries (tenant_id, created_at);
