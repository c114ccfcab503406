-- Tenants own every domain row. The seeded `dev` tenant makes a fresh local
-- database usable at once; the nil-uuid `system` tenant owns jobs that carry no
-- tenant (River's own periodic jobs, hand-inserted rows).
CREATE TABLE tenants (
    tenant_id  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    slug       text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now()
);

INSERT INTO tenants (tenant_id, slug, name) VALUES
    ('00000000-0000-0000-0000-000000000000', 'system', 'System'),
    ('00000000-0000-0000-0000-00000000de00', 'dev', 'Development tenant');
