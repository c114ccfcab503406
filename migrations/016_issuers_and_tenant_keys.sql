-- SPEC §16: every passport names who signed it.
--
-- An issuer profile per tenant: who the tenant is, as the public page names
-- it. identity_verified_at is set only by the platform after it checked the
-- company (POST /v1/tenants/{id}/issuer/verify); any later change of the
-- profile clears it. A tenant without a row has no profile (its passports
-- name the tenant only, and never show green).
CREATE TABLE issuer_profiles (
    tenant_id            uuid PRIMARY KEY REFERENCES tenants (tenant_id),
    legal_name           text NOT NULL CHECK (length(legal_name) BETWEEN 1 AND 200),
    country              text NOT NULL CHECK (country ~ '^[A-Z]{2}$'),
    registration_id      text NOT NULL CHECK (length(registration_id) BETWEEN 1 AND 100),
    website              text CHECK (website IS NULL OR (website ~ '^https://' AND length(website) <= 300)),
    identity_verified_at timestamptz,
    updated_at           timestamptz NOT NULL DEFAULT now()
);

-- Per-tenant signing keys. A row with a tenant_id is that tenant's key: its
-- private half is kept encrypted (AES-256-GCM under BPC_KEY_ENCRYPTION_KEY,
-- the 12-byte nonce first, the key id as additional data) and never leaves
-- the service. A row without one is the platform's legacy key, which signed
-- every tenant's receipts before this migration and keeps verifying them.
--
-- status: active (signs new passports; at most one per tenant), retired (a
-- rotation replaced it; what it signed still verifies), revoked (what it
-- signed at or after compromised_at no longer verifies).
ALTER TABLE signing_keys
    ADD COLUMN tenant_id uuid REFERENCES tenants (tenant_id),
    ADD COLUMN status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'retired', 'revoked')),
    ADD COLUMN private_key_encrypted bytea,
    ADD COLUMN retired_at timestamptz,
    ADD COLUMN revoked_at timestamptz,
    ADD COLUMN compromised_at timestamptz,
    ADD COLUMN revocation_reason text CHECK (revocation_reason IS NULL OR length(revocation_reason) BETWEEN 1 AND 500),
    ADD CONSTRAINT signing_keys_tenant_key_encrypted CHECK (tenant_id IS NULL OR private_key_encrypted IS NOT NULL),
    ADD CONSTRAINT signing_keys_revoked CHECK ((status = 'revoked') = (revoked_at IS NOT NULL AND compromised_at IS NOT NULL)),
    ADD CONSTRAINT signing_keys_retired CHECK (status <> 'retired' OR retired_at IS NOT NULL);

-- One active key per tenant: a rotation retires the old one and inserts
-- the new one in one transaction; two rotations racing, one waits.
CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (tenant_id)
    WHERE status = 'active' AND tenant_id IS NOT NULL;

-- A tenant's keys, for GET /v1/signing-keys and the public key directory.
CREATE INDEX signing_keys_tenant ON signing_keys (tenant_id, created_at) WHERE tenant_id IS NOT NULL;
