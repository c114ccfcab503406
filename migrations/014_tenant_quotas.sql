-- Per-tenant overrides of the quotas of SPEC §15 (webhook endpoints,
-- subscriptions, API keys, queued jobs, event payload bytes, the shared
-- request budget), set by the platform with PATCH /v1/tenants/{id}: a JSON
-- object of quota name to limit; a quota it does not name has the
-- service's default (the BPC_TENANT_* environment). A column, not a table:
-- the count quotas lock the tenant's row anyway (FOR NO KEY UPDATE) to
-- check and insert atomically, and that one read then also brings the
-- limits.
--
-- No unique index on a tenant's live endpoint URLs: databases written
-- before this migration may hold duplicates, which such an index would
-- refuse to build. The duplicate check runs under the same row lock, on
-- the URL normalised (passport.NormalizeEndpointURL).
ALTER TABLE tenants ADD COLUMN quotas jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(quotas) = 'object');
