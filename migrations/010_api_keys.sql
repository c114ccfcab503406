-- API keys: a tenant's credentials, each with a role (admin, writer, reader).
-- The token, bpc_<prefix>_<secret>, is shown once at creation and kept only
-- as its SHA-256: the secret is 32 random bytes, so a fast hash is enough and
-- no password hashing is needed. The prefix, unique, finds the row in one
-- index lookup. A key ends when revoked_at or expires_at passes; rows are
-- never deleted, so the tenant keeps the history of its keys.
-- last_used_at is written in batches by each process, not per request.
CREATE TABLE api_keys (
    api_key_id   uuid PRIMARY KEY,
    tenant_id    uuid NOT NULL REFERENCES tenants (tenant_id),
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    role         text NOT NULL CHECK (role IN ('admin', 'writer', 'reader')),
    prefix       text NOT NULL UNIQUE CHECK (prefix ~ '^[a-z2-7]{16}$'),
    token_sha256 bytea NOT NULL CHECK (length(token_sha256) = 32),
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    revoked_at   timestamptz,
    last_used_at timestamptz
);

CREATE INDEX api_keys_tenant_created ON api_keys (tenant_id, created_at DESC, api_key_id DESC);
