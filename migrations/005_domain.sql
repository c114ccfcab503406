-- The passport domain (SPEC §1, §2): documents and their versions, facts,
-- data snapshots, rule packages, battery products, passports and their
-- versions, exports and signing keys.
--
-- Tenant scoping is enforced by the schema, not only by the queries: every
-- table carries tenant_id, every parent has UNIQUE (tenant_id, <id>), and
-- every reference is a composite foreign key (tenant_id, <id>), so a row can
-- never point at another tenant's row.
--
-- Canonical artifacts (fact payloads, passport payload, proof, receipts) are
-- stored as bytea: the exact bytes that were hashed, never re-encoded by
-- Postgres (jsonb would reorder keys and drop the canonical form).

CREATE TABLE documents (
    document_id uuid PRIMARY KEY,
    tenant_id   uuid NOT NULL REFERENCES tenants (tenant_id),
    kind        text NOT NULL CHECK (kind IN ('BOM', 'PCF', 'DUE_DILIGENCE')),
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT documents_tenant_uniq UNIQUE (tenant_id, document_id)
);

CREATE INDEX documents_tenant_idx ON documents (tenant_id, created_at);

CREATE TABLE document_versions (
    document_version_id uuid PRIMARY KEY,
    tenant_id           uuid NOT NULL,
    document_id         uuid NOT NULL,
    version             integer NOT NULL CHECK (version > 0),
    mime_type           text NOT NULL,
    content             bytea NOT NULL,
    content_sha256      text NOT NULL CHECK (content_sha256 ~ '^[0-9a-f]{64}$'),
    status              text NOT NULL DEFAULT 'UPLOADED' CHECK (status IN ('UPLOADED', 'VALIDATED', 'REJECTED')),
    -- {code, message, field} of a rejected version.
    error               jsonb,
    fact_count          integer,
    created_at          timestamptz NOT NULL DEFAULT now(),
    processed_at        timestamptz,
    CONSTRAINT document_versions_tenant_uniq UNIQUE (tenant_id, document_version_id),
    CONSTRAINT document_versions_version_uniq UNIQUE (document_id, version),
    -- Uploading the same bytes again returns the existing version.
    CONSTRAINT document_versions_content_uniq UNIQUE (document_id, content_sha256),
    FOREIGN KEY (tenant_id, document_id) REFERENCES documents (tenant_id, document_id)
);

CREATE TABLE facts (
    fact_id                    uuid PRIMARY KEY,
    tenant_id                  uuid NOT NULL,
    fact_type                  text NOT NULL CHECK (length(fact_type) BETWEEN 1 AND 100),
    fact_key                   text NOT NULL CHECK (length(fact_key) BETWEEN 1 AND 300),
    schema_version             integer NOT NULL,
    -- BPC-CJSON-1 bytes and their SHA-256 hex.
    payload_canonical          bytea NOT NULL,
    payload_hash               text NOT NULL CHECK (payload_hash ~ '^[0-9a-f]{64}$'),
    source_document_version_id uuid NOT NULL,
    created_at                 timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT facts_tenant_uniq UNIQUE (tenant_id, fact_id),
    -- Parsing the same content twice (a retried job) adds nothing.
    CONSTRAINT facts_identity_uniq UNIQUE (tenant_id, fact_type, fact_key, schema_version, payload_hash),
    FOREIGN KEY (tenant_id, source_document_version_id) REFERENCES document_versions (tenant_id, document_version_id)
);

CREATE INDEX facts_type_key_idx ON facts (tenant_id, fact_type, fact_key);

-- Which facts each document version yielded, including facts first stored
-- from an earlier version with the same content (facts are deduplicated by
-- identity, so source_document_version_id names the first source only).
CREATE TABLE document_version_facts (
    tenant_id           uuid NOT NULL,
    document_version_id uuid NOT NULL,
    fact_id             uuid NOT NULL,
    PRIMARY KEY (document_version_id, fact_id),
    FOREIGN KEY (tenant_id, document_version_id) REFERENCES document_versions (tenant_id, document_version_id),
    FOREIGN KEY (tenant_id, fact_id) REFERENCES facts (tenant_id, fact_id)
);

CREATE TABLE data_snapshots (
    snapshot_id   uuid PRIMARY KEY,
    tenant_id     uuid NOT NULL REFERENCES tenants (tenant_id),
    status        text NOT NULL DEFAULT 'BUILDING' CHECK (status IN ('BUILDING', 'READY', 'SEALED')),
    -- BPC-SNAPSHOT-1 hash, set when sealed.
    snapshot_hash text CHECK (snapshot_hash ~ '^[0-9a-f]{64}$'),
    created_at    timestamptz NOT NULL DEFAULT now(),
    ready_at      timestamptz,
    sealed_at     timestamptz,
    CONSTRAINT data_snapshots_tenant_uniq UNIQUE (tenant_id, snapshot_id),
    CONSTRAINT data_snapshots_sealed_hash CHECK ((status = 'SEALED') = (snapshot_hash IS NOT NULL))
);

CREATE TABLE snapshot_items (
    tenant_id    uuid NOT NULL,
    snapshot_id  uuid NOT NULL,
    fact_id      uuid NOT NULL,
    fact_type    text NOT NULL,
    fact_key     text NOT NULL,
    payload_hash text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (snapshot_id, fact_id),
    -- The compiler needs one fact per (type, key).
    CONSTRAINT snapshot_items_type_key_uniq UNIQUE (snapshot_id, fact_type, fact_key),
    FOREIGN KEY (tenant_id, snapshot_id) REFERENCES data_snapshots (tenant_id, snapshot_id),
    FOREIGN KEY (tenant_id, fact_id) REFERENCES facts (tenant_id, fact_id)
);

CREATE TABLE rule_packages (
    rule_package_id uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL REFERENCES tenants (tenant_id),
    name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT rule_packages_tenant_uniq UNIQUE (tenant_id, rule_package_id),
    CONSTRAINT rule_packages_name_uniq UNIQUE (tenant_id, name)
);

CREATE TABLE rule_package_versions (
    rule_package_version_id uuid PRIMARY KEY,
    tenant_id               uuid NOT NULL,
    rule_package_id         uuid NOT NULL,
    version                 integer NOT NULL CHECK (version > 0),
    status                  text NOT NULL DEFAULT 'DRAFT' CHECK (status IN ('DRAFT', 'VALIDATED', 'PUBLISHED')),
    dsl_source              text NOT NULL,
    dsl_sha256              text NOT NULL CHECK (dsl_sha256 ~ '^[0-9a-f]{64}$'),
    tests_source            text NOT NULL,
    tests_sha256            text NOT NULL CHECK (tests_sha256 ~ '^[0-9a-f]{64}$'),
    created_at              timestamptz NOT NULL DEFAULT now(),
    validated_at            timestamptz,
    published_at            timestamptz,
    CONSTRAINT rule_package_versions_tenant_uniq UNIQUE (tenant_id, rule_package_version_id),
    CONSTRAINT rule_package_versions_version_uniq UNIQUE (rule_package_id, version),
    FOREIGN KEY (tenant_id, rule_package_id) REFERENCES rule_packages (tenant_id, rule_package_id)
);

CREATE TABLE rule_tests_runs (
    rule_tests_run_id       uuid PRIMARY KEY,
    tenant_id               uuid NOT NULL,
    rule_package_version_id uuid NOT NULL,
    seed                    bigint NOT NULL,
    status                  text NOT NULL CHECK (status IN ('PASSED', 'FAILED')),
    total_cases             integer NOT NULL,
    passed                  integer NOT NULL,
    failed                  integer NOT NULL,
    -- {test, case, inputs, expected, actual, message} of the first failure.
    first_failure           jsonb,
    -- The River job that ran the tests: a re-run of that job adds no row.
    river_job_id            bigint UNIQUE,
    created_at              timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, rule_package_version_id) REFERENCES rule_package_versions (tenant_id, rule_package_version_id)
);

CREATE INDEX rule_tests_runs_version_idx ON rule_tests_runs (tenant_id, rule_package_version_id, created_at);

CREATE TABLE battery_products (
    battery_product_id uuid PRIMARY KEY,
    tenant_id          uuid NOT NULL REFERENCES tenants (tenant_id),
    sku                text NOT NULL CHECK (length(sku) BETWEEN 1 AND 100),
    name               text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT battery_products_tenant_uniq UNIQUE (tenant_id, battery_product_id),
    CONSTRAINT battery_products_sku_uniq UNIQUE (tenant_id, sku)
);

CREATE TABLE passports (
    passport_id        uuid PRIMARY KEY,
    tenant_id          uuid NOT NULL,
    battery_product_id uuid NOT NULL,
    -- The ACTIVE version, if any.
    active_version_id  uuid,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT passports_tenant_uniq UNIQUE (tenant_id, passport_id),
    FOREIGN KEY (tenant_id, battery_product_id) REFERENCES battery_products (tenant_id, battery_product_id)
);

CREATE TABLE passport_versions (
    passport_version_id     uuid PRIMARY KEY,
    tenant_id               uuid NOT NULL,
    passport_id             uuid NOT NULL,
    version                 integer NOT NULL CHECK (version > 0),
    status                  text NOT NULL CHECK (status IN ('COMPILING', 'SIGNED', 'ACTIVE', 'SUPERSEDED')),
    snapshot_id             uuid NOT NULL,
    rule_package_version_id uuid NOT NULL,
    compiler_build_id       text NOT NULL,
    issued_at               timestamptz NOT NULL,
    payload                 bytea NOT NULL,
    payload_hash            text NOT NULL,
    proof                   bytea NOT NULL,
    proof_root_hash         text NOT NULL,
    -- The unsigned canonical receipt (what receipt_hash is over) and, once
    -- signed, the canonical receipt with its signature.
    receipt                 bytea NOT NULL,
    receipt_hash            text NOT NULL,
    receipt_signed          bytea,
    signature               text,
    signing_key_id          text NOT NULL,
    signing_public_key      text,
    qr_payload              text,
    qr_png                  bytea,
    -- The River job that compiled this version: a re-run of that job
    -- creates no second version.
    compile_river_job_id    bigint UNIQUE,
    created_at              timestamptz NOT NULL DEFAULT now(),
    signed_at               timestamptz,
    qr_generated_at         timestamptz,
    activated_at            timestamptz,
    superseded_at           timestamptz,
    CONSTRAINT passport_versions_tenant_uniq UNIQUE (tenant_id, passport_version_id),
    CONSTRAINT passport_versions_version_uniq UNIQUE (passport_id, version),
    CONSTRAINT passport_versions_signed CHECK (status = 'COMPILING' OR (signature IS NOT NULL AND receipt_signed IS NOT NULL)),
    FOREIGN KEY (tenant_id, passport_id) REFERENCES passports (tenant_id, passport_id),
    FOREIGN KEY (tenant_id, snapshot_id) REFERENCES data_snapshots (tenant_id, snapshot_id),
    FOREIGN KEY (tenant_id, rule_package_version_id) REFERENCES rule_package_versions (tenant_id, rule_package_version_id)
);

-- At most one ACTIVE version per passport.
CREATE UNIQUE INDEX passport_versions_one_active ON passport_versions (passport_id) WHERE status = 'ACTIVE';

ALTER TABLE passports ADD FOREIGN KEY (tenant_id, active_version_id)
    REFERENCES passport_versions (tenant_id, passport_version_id);

CREATE TABLE passport_exports (
    passport_export_id  uuid PRIMARY KEY,
    tenant_id           uuid NOT NULL,
    passport_version_id uuid NOT NULL,
    format              text NOT NULL,
    path                text NOT NULL,
    size_bytes          bigint NOT NULL CHECK (size_bytes > 0),
    sha256              text NOT NULL,
    river_job_id        bigint UNIQUE,
    created_at          timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, passport_version_id) REFERENCES passport_versions (tenant_id, passport_version_id)
);

-- Public keys that have signed receipts (service-wide). A key generated for
-- a dev database keeps its seed here so restarts sign with the same key; a
-- key from BPC_SIGNING_ED25519_PRIVATE_KEY_BASE64 is registered by its
-- public half only.
CREATE TABLE signing_keys (
    key_id            text PRIMARY KEY CHECK (length(key_id) BETWEEN 1 AND 100),
    alg               text NOT NULL DEFAULT 'ED25519' CHECK (alg = 'ED25519'),
    public_key_base64 text NOT NULL,
    dev_seed_base64   text,
    created_at        timestamptz NOT NULL DEFAULT now()
);
