-- A failed attempt's error is stored as a one-line JSON object,
-- {"code":"SNAPSHOT_NOT_READY","message":"…"}: the worker middleware hands
-- River an error with that text (Go: errcode.Encode) and River keeps it in
-- river_job.errors[].error; the lease reaper writes the same object in SQL.
-- bpc_last_error now reads code and message from it with jsonb operators.
--
-- Some texts there are not that object, and decoding them must never raise:
-- the function runs in the mirror's triggers, where a raise would fail
-- River's own update. River writes some itself: an operator's cancel of a
-- running job ("JobCancelError: job cancelled remotely", CANCELLED), a job
-- kind no worker is registered for, a row it cannot decode (INTERNAL_ERROR,
-- the text as message). And some are "CODE: message" — legacy, see below.
--
-- Postgres 15 has no pg_input_is_valid, so the cast to jsonb is tried in an
-- exception block, entered only for text that opens with '{'. (Entering one
-- starts a subtransaction, which no parallel query may do: hence PARALLEL
-- UNSAFE, so a query over River's errors never plans it into a parallel
-- worker.) The mirror's common path
-- never gets here: a job without errors passes NULL, and STRICT returns
-- NULL without calling the function. (BenchmarkMirrorLastError, 2 shared
-- cores, median µs per updated row over three runs: 14-16 without an error;
-- with one, 26-29 for 002's expressions on "CODE: message" and 25-26 for
-- this function on the JSON form.)
--
-- Legacy: before this migration workers stored "CODE: message" (through
-- river.JobCancel, "JobCancelError: CODE: message"), and a process of the
-- previous release, still running during a rolling deploy, keeps doing so
-- after it. Those texts are not rewritten: rewriting would update every
-- River job that has errors, under River's feet, and would miss what the old
-- processes write next. The branch that reads them keeps the expressions of
-- 002_jobs.sql; a later migration can drop it once no process of an earlier
-- release runs and the jobs they failed are gone from river_job. The lease
-- reaper counts LEASE_EXPIRED through this function, so it reads both forms
-- too.
CREATE OR REPLACE FUNCTION bpc_last_error(attempt_error jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL UNSAFE AS $$
DECLARE
    error_text text := coalesce(attempt_error->>'error', '');
    typed      jsonb;
    code       text;
    message    text;
BEGIN
    IF left(error_text, 1) = '{' THEN
        BEGIN
            typed := error_text::jsonb;
        EXCEPTION WHEN OTHERS THEN
            -- Not JSON (or none jsonb can hold: \u0000, nesting too deep).
            typed := NULL;
        END;
        IF jsonb_typeof(typed->'code') = 'string' AND typed->>'code' <> '' THEN
            code := typed->>'code';
            message := coalesce(typed->>'message', '');
        END IF;
    END IF;
    IF code IS NULL THEN
        IF error_text = 'JobCancelError: job cancelled remotely' THEN
            -- River's text for rivertype.ErrJobCancelledRemotely.
            code := 'CANCELLED';
            message := 'job cancelled remotely';
        ELSE
            -- River's own text, INTERNAL_ERROR; or legacy "CODE: message".
            code := COALESCE(
                substring(regexp_replace(error_text, '^JobCancelError: ', '') FROM '^([A-Z][A-Z0-9_]+): '),
                'INTERNAL_ERROR');
            message := regexp_replace(error_text, '^(JobCancelError: )?([A-Z][A-Z0-9_]+: )?', '');
        END IF;
    END IF;
    -- One line: errcode.Encode writes one, River's own texts may break lines.
    IF message <> translate(message, E'\n\r\t\f\x0b', '') THEN
        message := regexp_replace(message, '\s+', ' ', 'g');
    END IF;
    RETURN jsonb_build_object(
        'code', code,
        'message', left(message, 500),
        'attempt', (attempt_error->>'attempt')::integer,
        'at', attempt_error->'at');
END
$$;
