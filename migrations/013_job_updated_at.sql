-- A job's updated_at is never before its created_at. River stamps a new
-- job's created_at with the inserting process's clock (time.Now() as the
-- row is sent), while the mirror stamped updated_at with the database's
-- now(): the start of the inserting transaction. An insert late in a
-- transaction (the API's and the workers' InsertTx), or an application
-- clock ahead of the database's, made a new job's updated_at earlier than
-- its created_at. created_at stays River's (River UI shows the same);
-- updated_at is now() but never before it.

CREATE OR REPLACE FUNCTION bpc_mirror_river_insert() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO jobs_live (
        job_id, tenant_id, type, status, priority, attempts, max_attempts,
        idempotency_key, request_hash, payload, queue, scheduled_at,
        started_at, finished_at, lease_owner, lease_expires_at, last_error,
        river_job_id, created_at, updated_at)
    SELECT
        COALESCE((n.metadata->>'bpc_job_id')::uuid, gen_random_uuid()),
        COALESCE((n.args->>'tenant_id')::uuid, '00000000-0000-0000-0000-000000000000'),
        n.kind,
        bpc_ssot_status(n.state::text, n.metadata),
        n.priority - 1,
        n.attempt,
        n.max_attempts,
        n.metadata->>'bpc_idempotency_key',
        n.metadata->>'bpc_request_hash',
        n.args,
        n.queue,
        n.scheduled_at,
        n.attempted_at,
        n.finalized_at,
        CASE WHEN n.state = 'running' THEN n.attempted_by[array_upper(n.attempted_by, 1)] END,
        CASE WHEN n.state = 'running' THEN n.attempted_at + make_interval(secs => bpc_lease_seconds()) END,
        bpc_last_error(n.errors[array_upper(n.errors, 1)]),
        n.id,
        n.created_at,
        GREATEST(n.created_at, now())
    FROM new_rows n;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION bpc_mirror_river_update() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    lease interval := make_interval(secs => bpc_lease_seconds());
BEGIN
    UPDATE jobs_live j SET
        status           = bpc_ssot_status(n.state::text, n.metadata),
        priority         = n.priority - 1,
        attempts         = n.attempt,
        max_attempts     = n.max_attempts,
        queue            = n.queue,
        scheduled_at     = n.scheduled_at,
        started_at       = n.attempted_at,
        finished_at      = n.finalized_at,
        lease_owner      = CASE WHEN n.state = 'running' THEN n.attempted_by[array_upper(n.attempted_by, 1)] END,
        lease_expires_at = CASE WHEN n.state = 'running' THEN
            CASE WHEN j.status = 'RUNNING' AND j.attempts = n.attempt AND j.lease_expires_at > n.attempted_at + lease
                 THEN j.lease_expires_at ELSE n.attempted_at + lease END END,
        last_error       = CASE WHEN n.errors IS NOT NULL THEN bpc_last_error(n.errors[array_upper(n.errors, 1)]) END,
        updated_at       = GREATEST(j.created_at, now())
    FROM new_rows n
    WHERE j.river_job_id = n.id;
    RETURN NULL;
END
$$;

-- Rows mirrored before this migration.
UPDATE jobs_live SET updated_at = created_at WHERE updated_at < created_at;
UPDATE jobs_history SET updated_at = created_at WHERE updated_at < created_at;
