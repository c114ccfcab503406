-- The fair fetch (internal/jobrun/fairfetch) shares a queue's workers
-- fairly across tenants: it walks the distinct tenants with available
-- jobs in a queue (a loose index scan: one index descent per tenant) and
-- reads each tenant's first jobs in River's order. River's own index,
-- (state, queue, priority, scheduled_at, id), cannot do either without
-- reading a tenant's whole backlog, so this one leads with the tenant. It
-- is partial, like the work it serves: available rows only, which a busy
-- queue keeps few relative to the table. The tenant of a job is its args'
-- tenant_id; jobs without one (maintenance) form the tenant ''.
CREATE INDEX river_job_fair_fetch_idx ON river_job
    (queue, (coalesce(args->>'tenant_id', '')), priority, scheduled_at, id)
    WHERE state = 'available';
