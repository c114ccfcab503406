-- Job history at scale: the SSOT `jobs` is split in two tables behind one view.
--
--   jobs_live     the rows whose River job still exists (the table 002 made,
--                 renamed): fillfactor 30, no index on a column that changes,
--                 so every mirrored transition stays HOT.
--   jobs_history  the rows whose River job is gone (River's job cleaner, an
--                 operator's delete in River UI): never updated again, so
--                 they are packed (fillfactor 100) and indexed freely, by
--                 status too.
--   jobs          a view over both (UNION ALL): what every reader, River UI
--                 aside, and every operator's psql sees, as before.
--
-- The mirror's delete trigger moves a row from jobs_live to jobs_history in
-- River's own delete transaction, so a job is in exactly one of the two at
-- any snapshot: in jobs_live while River has it, in jobs_history after. Its
-- live state is then always River's, and River's own indexes on river_job
-- (state first) answer "which jobs are RUNNING, QUEUED, DEAD_LETTER" for the
-- live part, where jobs_live cannot index status without losing HOT updates.
--
-- Why not keep one table: pages of jobs_live stay about a third full for
-- good (fillfactor 30 is paid by finished rows too, ~1.1 KB a job with its
-- indexes), and an index on status would make the two updates of every job
-- non-HOT. Rows that no longer change need neither. (make bench, 10M rows:
-- see the README's benchmark section.)

ALTER TABLE jobs RENAME TO jobs_live;

-- Listing by the columns that never change after insert: adding these keeps
-- every update HOT. The operator's cross-tenant lists (platform token, no
-- tenant_id) and the type filter. Lists are newest first, read by scanning
-- these backwards; ties on created_at are ordered by job_id with an
-- incremental sort, so job_id is not part of the keys. Ascending, not DESC:
-- new rows then land at the right end of their range and B-tree pages
-- split 90/10 instead of 50/50 (measured: 22 instead of 40 bytes a row for
-- created_at alone). A tenant's jobs of one type are found through either
-- the tenant's or the type's index, filtering the other: an index on
-- (tenant_id, type, created_at) would cost 105 bytes a row in the history
-- (its pages split 50/50, as every tenant appends in the middle of the
-- tree), a fifth of a finished job's budget.
CREATE INDEX jobs_live_created_idx ON jobs_live (created_at);
CREATE INDEX jobs_live_type_created_idx ON jobs_live (type, created_at);

CREATE TABLE jobs_history (LIKE jobs_live INCLUDING CONSTRAINTS) WITH (fillfactor = 100);
ALTER TABLE jobs_history ADD PRIMARY KEY (job_id);
CREATE INDEX jobs_history_tenant_created_idx ON jobs_history (tenant_id, created_at);
CREATE INDEX jobs_history_created_idx ON jobs_history (created_at);
CREATE INDEX jobs_history_type_created_idx ON jobs_history (type, created_at);
-- Statuses other than SUCCEEDED are the rare ones an operator asks for
-- (DEAD_LETTER, FAILED, CANCELLED): partial, so they cost the common
-- SUCCEEDED row nothing. A SUCCEEDED list walks the created_at indexes,
-- where nearly every row matches.
CREATE INDEX jobs_history_status_created_idx ON jobs_history (status, created_at)
    WHERE status <> 'SUCCEEDED';
CREATE INDEX jobs_history_tenant_status_created_idx ON jobs_history (tenant_id, status, created_at)
    WHERE status <> 'SUCCEEDED';
-- An idempotency key keeps answering with its job after River forgot it,
-- until the SSOT retention removes the row.
CREATE INDEX jobs_history_idempotency_key_idx ON jobs_history (tenant_id, type, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE VIEW jobs AS
    SELECT * FROM jobs_live
    UNION ALL
    SELECT * FROM jobs_history;

-- The mirror's functions name their table at run time: they now write
-- jobs_live. Insert and update are otherwise those of 002 and 006.
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
        now()
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
        updated_at       = now()
    FROM new_rows n
    WHERE j.river_job_id = n.id;
    RETURN NULL;
END
$$;

-- bpc_job_gone is the history row of a live row whose River job is gone:
-- one that had not finished can never run now, so it ends CANCELLED.
CREATE FUNCTION bpc_job_gone(j jobs_live) RETURNS jobs_history
LANGUAGE sql STABLE AS $$
    SELECT j.job_id, j.river_job_id, j.tenant_id, j.created_at, j.type,
        j.idempotency_key, j.request_hash, j.payload, j.priority, j.max_attempts, j.queue,
        CASE WHEN j.status IN ('QUEUED', 'RUNNING') THEN 'CANCELLED' ELSE j.status END,
        j.attempts, j.scheduled_at, j.started_at,
        COALESCE(j.finished_at, now()),
        NULL::text, NULL::timestamptz,
        j.last_error, now(), now()
$$;

-- A deleted River job keeps its SSOT row: moved to jobs_history in the
-- delete's own transaction.
CREATE OR REPLACE FUNCTION bpc_mirror_river_delete() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT SET enable_hashjoin = off SET enable_mergejoin = off AS $$
BEGIN
    WITH gone AS (
        DELETE FROM jobs_live j USING old_rows o WHERE j.river_job_id = o.id RETURNING j AS live)
    INSERT INTO jobs_history SELECT h.* FROM gone, LATERAL bpc_job_gone(gone.live) h;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION bpc_mirror_river_truncate() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    WITH gone AS (DELETE FROM jobs_live j RETURNING j AS live)
    INSERT INTO jobs_history SELECT h.* FROM gone, LATERAL bpc_job_gone(gone.live) h;
    RETURN NULL;
END
$$;

-- Rows whose River job was already gone move now, as they will from here on.
WITH gone AS (DELETE FROM jobs_live j WHERE river_deleted_at IS NOT NULL RETURNING j.*)
INSERT INTO jobs_history SELECT * FROM gone;
