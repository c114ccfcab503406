-- The public verification routes cache their finished answers in every API
-- process (internal/http/public's Answers): a published version's bytes
-- never change, but what its answer shows can — its status (ACTIVE →
-- SUPERSEDED), its signing key (retired, revoked, replaced), its issuer's
-- profile and verification, its tenant's and product's names. These
-- triggers tell every process what to drop: a NOTIFY sent in the
-- transaction that changes such a row, delivered at its commit (and not at
-- all on rollback), on a channel named after the schema as River names its
-- own, so that two deployments (or two test schemas) sharing a database do
-- not hear each other. Triggers rather than calls in the store, so that no
-- way of changing these rows — a domain operation, a migration, an
-- operator's SQL — can leave a stale answer behind.
--
-- The payload is "<kind> <tenant_id or *> <id>": version (the version id),
-- key (the key id; * for the platform's legacy key, which signs for every
-- tenant) or tenant (no id). Only rows that a public answer shows notify:
-- a version that is not published has no answer to drop, and a tenant's
-- quotas are not on its pages.

CREATE FUNCTION bpc_public_answers_notify(kind text, tenant_id uuid, id text) RETURNS void
LANGUAGE sql SET search_path FROM CURRENT AS $$
    SELECT pg_notify(current_schema() || '.bpc_public_answers',
        kind || ' ' || coalesce(tenant_id::text, '*') || coalesce(' ' || id, ''))
$$;

CREATE FUNCTION bpc_public_version_changed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM bpc_public_answers_notify('version', OLD.tenant_id, OLD.passport_version_id::text);
    RETURN NULL;
END $$;

CREATE TRIGGER passport_versions_public_answers AFTER UPDATE OR DELETE ON passport_versions
    FOR EACH ROW WHEN (OLD.status IN ('ACTIVE', 'SUPERSEDED'))
    EXECUTE FUNCTION bpc_public_version_changed();

CREATE FUNCTION bpc_public_key_changed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM bpc_public_answers_notify('key', OLD.tenant_id, OLD.key_id);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        -- A new key under an id a receipt names, or a key moved: the new
        -- row's versions too (NOTIFY sends one of two equal payloads).
        PERFORM bpc_public_answers_notify('key', NEW.tenant_id, NEW.key_id);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER signing_keys_public_answers AFTER INSERT OR UPDATE OR DELETE ON signing_keys
    FOR EACH ROW EXECUTE FUNCTION bpc_public_key_changed();

CREATE FUNCTION bpc_public_tenant_changed() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM bpc_public_answers_notify('tenant', OLD.tenant_id, NULL);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM bpc_public_answers_notify('tenant', NEW.tenant_id, NULL);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER issuer_profiles_public_answers AFTER INSERT OR UPDATE OR DELETE ON issuer_profiles
    FOR EACH ROW EXECUTE FUNCTION bpc_public_tenant_changed();

CREATE TRIGGER tenants_public_answers AFTER UPDATE ON tenants
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name)
    EXECUTE FUNCTION bpc_public_tenant_changed();

CREATE TRIGGER battery_products_public_answers AFTER UPDATE ON battery_products
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.sku IS DISTINCT FROM NEW.sku)
    EXECUTE FUNCTION bpc_public_tenant_changed();
