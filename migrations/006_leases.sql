-- Heartbeat leases (SPEC §3): while a job runs, its worker renews
-- jobs.lease_expires_at every BPC_JOBS_LEASE_RENEW_SECONDS; a reaper returns
-- running jobs whose lease expired to River (workers/reaper.go), and the
-- pipeline handlers check their lease before committing (fencing).
--
-- The mirror's update function is redefined so that a renewed lease survives
-- River updates of the same running attempt.

-- The join is forced to a nested loop over jobs' river_job_id index: a
-- batch touches a few hundred rows of a table that keeps every job ever run,
-- and a hash join would read all of it on every fetch and completion.
CREATE OR REPLACE FUNCTION bpc_mirror_river_update() RETURNS trigger
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
        -- A lease renewed by the worker's heartbeat (workers/lease.go) is
        -- kept while the same attempt runs: River may update a running job
        -- (an operator's cancel request, metadata) without ending it.
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

