-- The audit log: append-only, one hash chain per aggregate (BPC-EVENT-1).
-- event_hash = SHA-256 of the canonical {tenant_id, aggregate_type,
-- aggregate_id, aggregate_version, event_type, occurred_at, actor_id,
-- payload_hash, prev_event_hash}; prev_event_hash is the hash of the
-- aggregate's previous version (null for version 1). Two writers appending
-- the same version collide on the unique key: EVENT_VERSION_CONFLICT.
CREATE TABLE events (
    event_id          uuid PRIMARY KEY,
    tenant_id         uuid NOT NULL REFERENCES tenants (tenant_id),
    aggregate_type    text NOT NULL CHECK (aggregate_type ~ '^[A-Za-z][A-Za-z0-9_.-]{0,63}$'),
    aggregate_id      uuid NOT NULL,
    aggregate_version bigint NOT NULL CHECK (aggregate_version >= 1),
    event_type        text NOT NULL CHECK (event_type ~ '^[A-Za-z][A-Za-z0-9_.-]{0,127}$'),
    occurred_at       timestamptz NOT NULL,
    actor_id          text,
    payload           bytea NOT NULL,
    payload_hash      text NOT NULL,
    prev_event_hash   text,
    event_hash        text NOT NULL UNIQUE,
    created_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT events_aggregate_version_uniq UNIQUE (tenant_id, aggregate_type, aggregate_id, aggregate_version)
);

CREATE INDEX events_tenant_occurred_idx ON events (tenant_id, occurred_at, event_id);

CREATE FUNCTION bpc_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events is append-only: % is not allowed', TG_OP
        USING ERRCODE = 'restrict_violation';
END
$$;

CREATE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION bpc_events_append_only();
