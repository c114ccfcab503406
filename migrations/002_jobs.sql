-- The SSOT `jobs` table: an exact mirror of River's river_job, kept in the
-- same transaction as every change to river_job by statement-level triggers.
--
-- Why statement-level with transition tables: River fetches and completes jobs
-- in batches (one UPDATE for many rows). A row-level trigger would run one
-- extra UPDATE per job; a statement-level one runs one set-based UPDATE per
-- batch. The running and completed updates of a job must stay HOT (no index
-- touched): no indexed column changes after insert (status, attempts and
-- timestamps are deliberately unindexed), and fillfactor 30 leaves room on
-- each page for the new versions even while concurrent transactions keep
-- the old ones from being pruned. (make bench, 2 cores: fillfactor 50 gave
-- a service/bare River ratio of about 0.78, 30 about 0.85.) The price is
-- space: pages of finished jobs stay about a third full.
CREATE TABLE jobs (
    -- Set at insert, never changed.
    job_id           uuid PRIMARY KEY,
    river_job_id     bigint NOT NULL UNIQUE,
    tenant_id        uuid NOT NULL,
    created_at       timestamptz NOT NULL,
    type             text NOT NULL,
    idempotency_key  text CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    request_hash     text,
    payload          jsonb NOT NULL,
    -- Changed by River (kept together at the end: Postgres logs an update
    -- of a row on the same page as the changed middle only, so the
    -- immutable prefix, payload included, costs no WAL on each transition).
    -- River's own constraints bound priority, attempts and max_attempts;
    -- repeating them here would cost a check on every mirrored update.
    priority         smallint NOT NULL,
    max_attempts     integer NOT NULL,
    queue            text NOT NULL,
    status           text NOT NULL CHECK (status IN ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'DEAD_LETTER')),
    attempts         integer NOT NULL,
    scheduled_at     timestamptz NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz,
    lease_owner      text,
    lease_expires_at timestamptz,
    last_error       jsonb,
    -- Set when the River row is deleted (River UI delete, job cleaner): the
    -- SSOT row stays as history.
    river_deleted_at timestamptz,
    updated_at       timestamptz NOT NULL
) WITH (fillfactor = 30);

-- Idempotency keys are unique per tenant and type. Partial: most jobs carry
-- none, and they cost this index nothing.
CREATE UNIQUE INDEX jobs_idempotency_key_uniq ON jobs (tenant_id, type, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- Listing: newest first within a tenant, keyset pagination on (created_at, job_id).
CREATE INDEX jobs_tenant_created_idx ON jobs (tenant_id, created_at DESC, job_id DESC);

-- bpc_ssot_status maps a River state to the SSOT status (SPEC §3). A
-- cancellation requested by an operator (River UI, admin API) leaves
-- cancel_attempted_at in the metadata; a worker's river.JobCancel does not.
CREATE FUNCTION bpc_ssot_status(river_state text, metadata jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE river_state
        WHEN 'running'   THEN 'RUNNING'
        WHEN 'completed' THEN 'SUCCEEDED'
        WHEN 'discarded' THEN 'DEAD_LETTER'
        WHEN 'cancelled' THEN CASE WHEN metadata ? 'cancel_attempted_at' THEN 'CANCELLED' ELSE 'FAILED' END
        ELSE 'QUEUED'
    END
$$;

-- bpc_last_error turns River's last AttemptError into {code, message,
-- attempt, at}. Workers' typed errors read "CODE: message"; anything else is
-- INTERNAL_ERROR with the text as message. Messages are one line, bounded.
-- A single expression (no FROM) so that the planner inlines it.
CREATE FUNCTION bpc_last_error(attempt_error jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN attempt_error IS NULL THEN NULL ELSE jsonb_build_object(
        'code', COALESCE(
            substring(regexp_replace(attempt_error->>'error', '^JobCancelError: ', '') FROM '^([A-Z][A-Z0-9_]+): '),
            CASE WHEN attempt_error->>'error' ~* 'cancelled remotely' THEN 'CANCELLED' ELSE 'INTERNAL_ERROR' END),
        'message', left(regexp_replace(
            regexp_replace(COALESCE(attempt_error->>'error', ''), '^(JobCancelError: )?([A-Z][A-Z0-9_]+: )?', ''),
            '\s+', ' ', 'g'), 500),
        'attempt', (attempt_error->>'attempt')::integer,
        'at', attempt_error->'at')
    END
$$;

-- bpc_lease_seconds is the lease TTL a RUNNING job is given. The service sets
-- bpc.lease_seconds on its connections from BPC_JOBS_LEASE_SECONDS.
CREATE FUNCTION bpc_lease_seconds() RETURNS integer
LANGUAGE sql STABLE AS $$
    SELECT COALESCE(NULLIF(current_setting('bpc.lease_seconds', true), '')::integer, 60)
$$;

CREATE FUNCTION bpc_mirror_river_insert() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO jobs (
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
        now()
    FROM new_rows n;
    RETURN NULL;
END
$$;

-- The join is forced to a nested loop over jobs' river_job_id index: a
-- batch touches a few hundred rows of a table that keeps every job ever run,
-- and a hash join would read all of it on every fetch and completion.
CREATE FUNCTION bpc_mirror_river_update() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    lease interval := make_interval(secs => bpc_lease_seconds());
BEGIN
    UPDATE jobs j SET
        status           = bpc_ssot_status(n.state::text, n.metadata),
        priority         = n.priority - 1,
        attempts         = n.attempt,
        max_attempts     = n.max_attempts,
        queue            = n.queue,
        scheduled_at     = n.scheduled_at,
        started_at       = n.attempted_at,
        finished_at      = n.finalized_at,
        lease_owner      = CASE WHEN n.state = 'running' THEN n.attempted_by[array_upper(n.attempted_by, 1)] END,
        lease_expires_at = CASE WHEN n.state = 'running' THEN n.attempted_at + lease END,
        last_error       = CASE WHEN n.errors IS NOT NULL THEN bpc_last_error(n.errors[array_upper(n.errors, 1)]) END,
        updated_at       = now()
    FROM new_rows n
    WHERE j.river_job_id = n.id;
    RETURN NULL;
END
$$;

-- A deleted River job keeps its SSOT row. One that had not finished can never
-- run now, so it ends CANCELLED.
CREATE FUNCTION bpc_mirror_river_delete() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE jobs j SET
        status           = CASE WHEN j.status IN ('QUEUED', 'RUNNING') THEN 'CANCELLED' ELSE j.status END,
        finished_at      = COALESCE(j.finished_at, now()),
        lease_owner      = NULL,
        lease_expires_at = NULL,
        river_deleted_at = now(),
        updated_at       = now()
    FROM old_rows o
    WHERE j.river_job_id = o.id;
    RETURN NULL;
END
$$;

CREATE FUNCTION bpc_mirror_river_truncate() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    UPDATE jobs SET
        status           = CASE WHEN status IN ('QUEUED', 'RUNNING') THEN 'CANCELLED' ELSE status END,
        finished_at      = COALESCE(finished_at, now()),
        lease_owner      = NULL,
        lease_expires_at = NULL,
        river_deleted_at = now(),
        updated_at       = now()
    WHERE river_deleted_at IS NULL;
    RETURN NULL;
END
$$;

CREATE TRIGGER bpc_mirror_insert AFTER INSERT ON river_job
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION bpc_mirror_river_insert();
CREATE TRIGGER bpc_mirror_update AFTER UPDATE ON river_job
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION bpc_mirror_river_update();
CREATE TRIGGER bpc_mirror_delete AFTER DELETE ON river_job
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION bpc_mirror_river_delete();
CREATE TRIGGER bpc_mirror_truncate AFTER TRUNCATE ON river_job
    FOR EACH STATEMENT EXECUTE FUNCTION bpc_mirror_river_truncate();

-- Fire even under session_replication_role = replica, so that a bulk load or
-- a logical-replication apply cannot slip past the mirror.
ALTER TABLE river_job ENABLE ALWAYS TRIGGER bpc_mirror_insert;
ALTER TABLE river_job ENABLE ALWAYS TRIGGER bpc_mirror_update;
ALTER TABLE river_job ENABLE ALWAYS TRIGGER bpc_mirror_delete;
ALTER TABLE river_job ENABLE ALWAYS TRIGGER bpc_mirror_truncate;

-- Jobs that already existed when the mirror was installed.
INSERT INTO jobs (
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
    now()
FROM river_job n
ON CONFLICT (river_job_id) DO NOTHING;
