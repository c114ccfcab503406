-- The public answers' channel (017) was "<schema>.bpc_public_answers". A
-- schema's name longer than 44 bytes made it longer than Postgres' 63-byte
-- identifiers: LISTEN truncated it, and pg_notify refused it ("channel
-- name too long"), failing the very change of a version, key, issuer,
-- tenant or product whose trigger notified. The channel is now named by
-- bpc_public_answers_channel(schema), which the triggers and every
-- listening process (internal/http/public's Listen) call alike, so the
-- two cannot disagree: for a schema of up to 44 bytes the name is as
-- before (processes of the previous release keep hearing), for a longer
-- one "bpc_public_answers." and the md5 of the schema's name (51 bytes),
-- one per schema however long their common prefix.

CREATE FUNCTION bpc_public_answers_channel(schema text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN octet_length(schema) <= 44 THEN schema || '.bpc_public_answers'
        ELSE 'bpc_public_answers.' || md5(schema) END
$$;

CREATE OR REPLACE FUNCTION bpc_public_answers_notify(kind text, tenant_id uuid, id text) RETURNS void
LANGUAGE sql SET search_path FROM CURRENT AS $$
    SELECT pg_notify(bpc_public_answers_channel(current_schema()),
        kind || ' ' || coalesce(tenant_id::text, '*') || coalesce(' ' || id, ''))
$$;
