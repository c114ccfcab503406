-- The live SSOT row split in two: what a job was created with, and what
-- River changes.
--
--   jobs_live_fixed  insert-only: job_id, river_job_id, tenant, type, keys,
--                    payload, created_at (the table jobs_live was, renamed,
--                    with its indexes). Never updated, so packed
--                    (fillfactor 100) and indexed freely.
--   jobs_live_state  one narrow row per live job, keyed by river_job_id:
--                    status, attempts, times, lease, last error — the
--                    columns River's fetch and completion change, twice a
--                    job. fillfactor 30 and no index but its key, so those
--                    updates stay HOT.
--   jobs_live        a view joining the two, with the columns and order the
--                    table had: what readers select from. An INSTEAD OF
--                    trigger takes updates of it (the previous release's
--                    lease renewals during a rolling upgrade, an operator's
--                    hand fix in psql) to the two tables.
--   jobs             the view over jobs_live and jobs_history, as before.
--
-- Why: the mirror's update trigger rewrote the whole 21-column row, payload
-- and all, and checked its CHECK constraints, twice for every job. The
-- narrow row leaves the payload and keys alone: the update trigger's time a job
-- fell by a quarter and the WAL a job by 160 bytes (bench/MIRROR_COST.md,
-- "fourth round").
--
-- Rows already live are copied, in this migration's transaction, with the
-- mirror's tables locked: 1.2 s for 200 000 live jobs on the 2-core
-- development machine (River's retention of finished jobs,
-- BPC_RETENTION_RIVER_DAYS, bounds how many there are). The
-- dropped columns' bytes stay in the old tuples until River's job cleaner
-- moves those jobs to jobs_history.

-- jobs_live first, as the API's transactions lock it (a job's row, then
-- the view jobs): taking the view first made this migration and a job
-- action in flight deadlock (found in review). A transaction already
-- holding a lock on jobs_live is queued ahead of this one, so it finishes.
LOCK TABLE jobs_live IN ACCESS EXCLUSIVE MODE;
DROP VIEW jobs;
DROP FUNCTION bpc_job_gone(jobs_live);
ALTER TABLE jobs_live RENAME TO jobs_live_fixed;

CREATE TABLE jobs_live_state (
    river_job_id     bigint PRIMARY KEY,
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
    updated_at       timestamptz NOT NULL
) WITH (fillfactor = 30);

INSERT INTO jobs_live_state
SELECT river_job_id, priority, max_attempts, queue, status, attempts, scheduled_at, started_at,
    finished_at, lease_owner, lease_expires_at, last_error, updated_at
FROM jobs_live_fixed;

ALTER TABLE jobs_live_fixed
    DROP COLUMN priority, DROP COLUMN max_attempts, DROP COLUMN queue, DROP COLUMN status,
    DROP COLUMN attempts, DROP COLUMN scheduled_at, DROP COLUMN started_at, DROP COLUMN finished_at,
    DROP COLUMN lease_owner, DROP COLUMN lease_expires_at, DROP COLUMN last_error,
    DROP COLUMN river_deleted_at, DROP COLUMN updated_at;
ALTER TABLE jobs_live_fixed SET (fillfactor = 100);

-- A plain join, so the planner reaches either table's indexes through it.
-- river_deleted_at is always NULL here: a job whose River job is gone is in
-- jobs_history.
CREATE VIEW jobs_live AS
    SELECT f.job_id, f.river_job_id, f.tenant_id, f.created_at, f.type,
        f.idempotency_key, f.request_hash, f.payload, s.priority, s.max_attempts, s.queue,
        s.status, s.attempts, s.scheduled_at, s.started_at, s.finished_at,
        s.lease_owner, s.lease_expires_at, s.last_error,
        NULL::timestamptz AS river_deleted_at, s.updated_at
    FROM jobs_live_fixed f JOIN jobs_live_state s ON s.river_job_id = f.river_job_id;

CREATE VIEW jobs AS
    SELECT * FROM jobs_live
    UNION ALL
    SELECT * FROM jobs_history;

-- An update of the view writes each half; the fixed half only when one of
-- its columns changes (the previous release's lease renewal changes none).
-- Its river_job_id, the key of both, is not changed here.
--
-- The view's row (OLD) is as the statement's snapshot saw it, and Postgres
-- does not re-read a view's row that changed under it as it re-reads a
-- table's (EvalPlanQual). So the state half is written only while it still
-- is OLD's: a River transition committed since (a completion racing the
-- previous release's lease renewal) makes the update skip the row, as it
-- would have skipped a table's row that no longer matched, instead of
-- writing the stale RUNNING back over it (found in review).
CREATE FUNCTION bpc_jobs_live_update() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NEW.river_job_id IS DISTINCT FROM OLD.river_job_id OR NEW.river_deleted_at IS NOT NULL THEN
        RAISE EXCEPTION 'jobs_live: river_job_id and river_deleted_at are not updatable'
            USING ERRCODE = 'feature_not_supported';
    END IF;
    UPDATE jobs_live_state s SET priority = NEW.priority, max_attempts = NEW.max_attempts, queue = NEW.queue,
        status = NEW.status, attempts = NEW.attempts, scheduled_at = NEW.scheduled_at, started_at = NEW.started_at,
        finished_at = NEW.finished_at, lease_owner = NEW.lease_owner, lease_expires_at = NEW.lease_expires_at,
        last_error = NEW.last_error, updated_at = NEW.updated_at
    WHERE s.river_job_id = OLD.river_job_id
      AND (s.priority, s.max_attempts, s.queue, s.status, s.attempts, s.scheduled_at, s.started_at,
           s.finished_at, s.lease_owner, s.lease_expires_at, s.last_error, s.updated_at)
          IS NOT DISTINCT FROM
          (OLD.priority, OLD.max_attempts, OLD.queue, OLD.status, OLD.attempts, OLD.scheduled_at, OLD.started_at,
           OLD.finished_at, OLD.lease_owner, OLD.lease_expires_at, OLD.last_error, OLD.updated_at);
    IF NOT FOUND THEN
        RETURN NULL; -- changed or gone since the statement's snapshot: not updated
    END IF;
    IF (NEW.job_id, NEW.tenant_id, NEW.created_at, NEW.type, NEW.idempotency_key, NEW.request_hash, NEW.payload)
        IS DISTINCT FROM (OLD.job_id, OLD.tenant_id, OLD.created_at, OLD.type, OLD.idempotency_key, OLD.request_hash, OLD.payload) THEN
        UPDATE jobs_live_fixed SET job_id = NEW.job_id, tenant_id = NEW.tenant_id, created_at = NEW.created_at,
            type = NEW.type, idempotency_key = NEW.idempotency_key, request_hash = NEW.request_hash, payload = NEW.payload
        WHERE river_job_id = OLD.river_job_id;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER jobs_live_update INSTEAD OF UPDATE ON jobs_live
    FOR EACH ROW EXECUTE FUNCTION bpc_jobs_live_update();

CREATE OR REPLACE FUNCTION bpc_mirror_river_insert() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO jobs_live_fixed (
        job_id, tenant_id, type, idempotency_key, request_hash, payload, river_job_id, created_at)
    SELECT
        COALESCE((n.metadata->>'bpc_job_id')::uuid, gen_random_uuid()),
        COALESCE((n.args->>'tenant_id')::uuid, '00000000-0000-0000-0000-000000000000'),
        n.kind,
        n.metadata->>'bpc_idempotency_key',
        n.metadata->>'bpc_request_hash',
        n.args,
        n.id,
        n.created_at
    FROM new_rows n;
    INSERT INTO jobs_live_state (
        river_job_id, priority, max_attempts, queue, status, attempts, scheduled_at,
        started_at, finished_at, lease_owner, lease_expires_at, last_error, updated_at)
    SELECT
        n.id,
        n.priority - 1,
        n.max_attempts,
        n.queue,
        bpc_ssot_status(n.state::text, n.metadata),
        n.attempt,
        n.scheduled_at,
        n.attempted_at,
        n.finalized_at,
        CASE WHEN n.state = 'running' THEN n.attempted_by[array_upper(n.attempted_by, 1)] END,
        CASE WHEN n.state = 'running' THEN n.attempted_at + make_interval(secs => bpc_lease_seconds()) END,
        bpc_last_error(n.errors[array_upper(n.errors, 1)]),
        GREATEST(n.created_at, now())
    FROM new_rows n;
    RETURN NULL;
END
$$;

-- created_at is in jobs_live_fixed: updated_at is never before it because it is
-- never before the insert's, which was (migration 013).
CREATE OR REPLACE FUNCTION bpc_mirror_river_update() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT SET enable_hashjoin = off SET enable_mergejoin = off AS $$
DECLARE
    lease interval := make_interval(secs => bpc_lease_seconds());
BEGIN
    UPDATE jobs_live_state j SET
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
        updated_at       = GREATEST(j.updated_at, now())
    FROM new_rows n
    WHERE j.river_job_id = n.id;
    RETURN NULL;
END
$$;

-- bpc_job_gone is the history row of a live job whose River job is gone:
-- one that had not finished can never run now, so it ends CANCELLED. A
-- fixed half whose state half is missing (drift the consistency check
-- reports; nothing in the service writes one without the other) is kept
-- too, CANCELLED, with what is known of it: its ids, tenant, type, keys and
-- payload are not lost with its River job.
CREATE FUNCTION bpc_job_gone(l jobs_live_fixed, s jobs_live_state) RETURNS jobs_history
LANGUAGE sql STABLE AS $$
    SELECT l.job_id, l.river_job_id, l.tenant_id, l.created_at, l.type,
        l.idempotency_key, l.request_hash, l.payload,
        COALESCE(s.priority, 0::smallint), COALESCE(s.max_attempts, 0), COALESCE(s.queue, ''),
        CASE WHEN s.status IS NULL OR s.status IN ('QUEUED', 'RUNNING') THEN 'CANCELLED' ELSE s.status END,
        COALESCE(s.attempts, 0), COALESCE(s.scheduled_at, l.created_at), s.started_at,
        COALESCE(s.finished_at, now()),
        NULL::text, NULL::timestamptz,
        s.last_error, now(), now()
$$;

-- Three statements, each a nested loop of index probes by river_job_id
-- (linear in the rows River deletes: its job cleaner deletes up to 10 000 a
-- statement), and the fixed half deleted before the state half: the order
-- in which a reader's FOR UPDATE of the view locks them (GetJobForUpdate),
-- so the two cannot deadlock (found in review: a join of two deleting CTEs
-- was quadratic and locked them the other way round).
CREATE OR REPLACE FUNCTION bpc_mirror_river_delete() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT SET enable_hashjoin = off SET enable_mergejoin = off AS $$
BEGIN
    INSERT INTO jobs_history
    SELECT h.* FROM old_rows o
        JOIN jobs_live_fixed l ON l.river_job_id = o.id
        LEFT JOIN jobs_live_state s ON s.river_job_id = o.id,
        LATERAL bpc_job_gone(l, s) h;
    DELETE FROM jobs_live_fixed l USING old_rows o WHERE l.river_job_id = o.id;
    DELETE FROM jobs_live_state s USING old_rows o WHERE s.river_job_id = o.id;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION bpc_mirror_river_truncate() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO jobs_history
    SELECT h.* FROM jobs_live_fixed l
        LEFT JOIN jobs_live_state s ON s.river_job_id = l.river_job_id,
        LATERAL bpc_job_gone(l, s) h;
    DELETE FROM jobs_live_fixed;
    DELETE FROM jobs_live_state;
    RETURN NULL;
END
$$;
