-- An operator's retry of a job is marked on the River job itself, in the
-- transaction that retries it, whatever the path: River UI, the admin API
-- (both call River's JobRetry), the river CLI or plain SQL. The mark is
-- metadata.bpc_operator_retry = {"at": <when>, "after_attempt": <attempts
-- made before the retry>}, so a worker knows from the job row it fetched
-- that this attempt (attempt = after_attempt + 1) is the one an operator
-- asked for: the webhook circuit breaker lets it through at once as its
-- probe instead of holding it until the cool-down ends (workers/breaker.go).
-- An attempt after it (the probe failed, River retries) is automatic again.
--
-- A retry is a job made available to run now from a state other than
-- running, either un-finalized (it was completed, cancelled or discarded) or
-- rescheduled (it was waiting: retryable, scheduled, or held with a future
-- scheduled_at).
-- River's own transitions are not retries: its scheduler makes due jobs
-- available keeping scheduled_at, and fetch, completion, snooze, the
-- rescuer and the lease reaper start from running. The one automatic
-- rescheduling to now is the breaker's wake of held deliveries when it
-- closes; it sets bpc.automatic_wake for its transaction, and is not marked.
--
-- Row-level with a WHEN condition: the condition is checked on every
-- update of river_job (fetch and completion batches included) without
-- calling the function, which runs only for the rare rows that match.
CREATE FUNCTION bpc_mark_operator_retry() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('bpc.automatic_wake', true) = 'on' THEN
        RETURN NEW;
    END IF;
    NEW.metadata := NEW.metadata || jsonb_build_object('bpc_operator_retry',
        jsonb_build_object('at', now(), 'after_attempt', NEW.attempt));
    RETURN NEW;
END
$$;

CREATE TRIGGER bpc_mark_operator_retry BEFORE UPDATE ON river_job
    FOR EACH ROW
    WHEN (OLD.state <> 'running' AND NEW.state = 'available' AND NEW.scheduled_at <= now()
          AND (OLD.finalized_at IS NOT NULL OR NEW.scheduled_at IS DISTINCT FROM OLD.scheduled_at))
    EXECUTE FUNCTION bpc_mark_operator_retry();

-- Like the mirror's triggers: fire under session_replication_role = replica too.
ALTER TABLE river_job ENABLE ALWAYS TRIGGER bpc_mark_operator_retry;
