package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
)

// RegisterSigningKey records the public key of keyID. The same key again is
// a no-op; another public key under a registered id is a CONFLICT, because
// receipts signed under that id must stay verifiable: rotate to a new id.
func (q *Queries) RegisterSigningKey(ctx context.Context, keyID, publicKeyBase64 string) error {
	var stored string
	err := q.db.QueryRow(ctx, `INSERT INTO signing_keys (key_id, public_key_base64) VALUES ($1, $2)
		ON CONFLICT (key_id) DO UPDATE SET key_id = EXCLUDED.key_id
		RETURNING public_key_base64`, keyID, publicKeyBase64).Scan(&stored)
	if err != nil {
		return fmt.Errorf("error registering signing key %s: %w", keyID, err)
	}
	if stored != publicKeyBase64 {
		return errcode.New(errcode.Conflict, "signing key id %q is registered with another public key; give a new key a new BPC_SIGNING_KEY_ID", keyID)
	}
	return nil
}

// DevSigningSeed returns the seed of a dev key generated for this database
// under keyID, or ErrNotFound.
func (q *Queries) DevSigningSeed(ctx context.Context, keyID string) (string, error) {
	var seed *string
	err := q.db.QueryRow(ctx, `SELECT dev_seed_base64 FROM signing_keys WHERE key_id = $1`, keyID).Scan(&seed)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && seed == nil) {
		return "", errcode.Wrap(errcode.NotFound, ErrNotFound, "no dev signing key %s", keyID)
	}
	if err != nil {
		return "", fmt.Errorf("error loading dev signing key %s: %w", keyID, err)
	}
	return *seed, nil
}

// StoreDevSigningKey records a generated dev key with its seed, unless one
// was stored first (concurrent starts): the stored seed is returned.
func (q *Queries) StoreDevSigningKey(ctx context.Context, keyID, publicKeyBase64, seedBase64 string) (string, error) {
	var seed *string
	err := q.db.QueryRow(ctx, `INSERT INTO signing_keys (key_id, public_key_base64, dev_seed_base64) VALUES ($1, $2, $3)
		ON CONFLICT (key_id) DO UPDATE SET key_id = EXCLUDED.key_id
		RETURNING dev_seed_base64`, keyID, publicKeyBase64, seedBase64).Scan(&seed)
	if err != nil {
		return "", fmt.Errorf("error storing dev signing key %s: %w", keyID, err)
	}
	if seed == nil {
		return "", errcode.New(errcode.Conflict, "signing key id %q is registered without a dev seed; set BPC_SIGNING_ED25519_PRIVATE_KEY_BASE64 or use another BPC_SIGNING_KEY_ID", keyID)
	}
	return *seed, nil
}

// ListSigningKeys returns every registered public key by id.
func (q *Queries) ListSigningKeys(ctx context.Context) ([]bpctype.SigningKey, error) {
	return list[bpctype.SigningKey](ctx, q.db, "signing keys",
		`SELECT `+signingKeyColumns+` FROM signing_keys ORDER BY key_id`)
}

// signingKeyColumns are bpctype.SigningKey's columns.
const signingKeyColumns = `key_id, tenant_id, alg, public_key_base64, status, created_at,
	retired_at, revoked_at, compromised_at, revocation_reason`

// TenantSigningKey is a signing key row with its encrypted private half
// (nil for the platform's legacy key), for the keyring only: the private
// half never leaves package passport.
type TenantSigningKey struct {
	bpctype.SigningKey
	PrivateKeyEncrypted []byte `db:"private_key_encrypted"`
}

const tenantSigningKeyColumns = signingKeyColumns + `, private_key_encrypted`

// GetSigningKey returns the key keyID whoever owns it (the caller checks
// the owner), or NOT_FOUND.
func (q *Queries) GetSigningKey(ctx context.Context, keyID string) (TenantSigningKey, error) {
	return getOne[TenantSigningKey](ctx, q.db, "signing key", keyID,
		`SELECT `+tenantSigningKeyColumns+` FROM signing_keys WHERE key_id = $1`, keyID)
}

// ActiveSigningKey returns the tenant's active key, if it has one.
func (q *Queries) ActiveSigningKey(ctx context.Context, tenantID uuid.UUID) (bpctype.SigningKey, bool, error) {
	return findOne[bpctype.SigningKey](ctx, q.db, "active signing key", activeSigningKeySQL, tenantID)
}

const activeSigningKeySQL = `SELECT ` + signingKeyColumns + ` FROM signing_keys WHERE tenant_id = $1 AND status = 'active'`

// LockTenantSigningKeys locks the tenant's row (FOR NO KEY UPDATE) so that
// its keys are created, rotated and revoked one at a time, and returns the
// tenant's slug; no tenant is NOT_FOUND.
func (q *Queries) LockTenantSigningKeys(ctx context.Context, tenantID uuid.UUID) (string, error) {
	var slug string
	err := q.db.QueryRow(ctx, `SELECT slug FROM tenants WHERE tenant_id = $1 FOR NO KEY UPDATE`, tenantID).Scan(&slug)
	if err != nil {
		return "", notFound(err, "tenant", tenantID)
	}
	return slug, nil
}

// CountTenantSigningKeys counts the tenant's keys, whatever their status.
func (q *Queries) CountTenantSigningKeys(ctx context.Context, tenantID uuid.UUID) (int, error) {
	var n int
	if err := q.db.QueryRow(ctx, `SELECT count(*) FROM signing_keys WHERE tenant_id = $1`, tenantID).Scan(&n); err != nil {
		return 0, fmt.Errorf("error counting signing keys of tenant %s: %w", tenantID, err)
	}
	return n, nil
}

// InsertTenantSigningKey inserts an active key of the tenant under keyID;
// inserted is false (and nothing changes) when keyID is taken, by any
// tenant or the platform.
func (q *Queries) InsertTenantSigningKey(ctx context.Context, tenantID uuid.UUID, keyID, publicKeyBase64 string, encrypted []byte) (bpctype.SigningKey, bool, error) {
	return findOne[bpctype.SigningKey](ctx, q.db, "signing key "+keyID,
		`INSERT INTO signing_keys (key_id, tenant_id, public_key_base64, status, private_key_encrypted)
		VALUES ($1, $2, $3, 'active', $4) ON CONFLICT (key_id) DO NOTHING
		RETURNING `+signingKeyColumns, keyID, tenantID, publicKeyBase64, encrypted)
}

// RetireSigningKey retires the tenant's active key keyID (retired_at now).
func (q *Queries) RetireSigningKey(ctx context.Context, tenantID uuid.UUID, keyID string) (bpctype.SigningKey, error) {
	return getOne[bpctype.SigningKey](ctx, q.db, "active signing key", keyID,
		`UPDATE signing_keys SET status = 'retired', retired_at = now()
		WHERE tenant_id = $1 AND key_id = $2 AND status = 'active' RETURNING `+signingKeyColumns, tenantID, keyID)
}

// LockTenantSigningKey returns the tenant's key keyID locked FOR UPDATE;
// another tenant's key, the platform's and an unknown id are NOT_FOUND.
func (q *Queries) LockTenantSigningKey(ctx context.Context, tenantID uuid.UUID, keyID string) (bpctype.SigningKey, error) {
	return getOne[bpctype.SigningKey](ctx, q.db, "signing key", keyID,
		`SELECT `+signingKeyColumns+` FROM signing_keys WHERE tenant_id = $1 AND key_id = $2 FOR UPDATE`, tenantID, keyID)
}

// SetSigningKeyRevoked marks the tenant's key keyID revoked at revokedAt,
// compromised since compromisedAt, for reason.
func (q *Queries) SetSigningKeyRevoked(ctx context.Context, tenantID uuid.UUID, keyID string, revokedAt, compromisedAt time.Time, reason string) (bpctype.SigningKey, error) {
	return getOne[bpctype.SigningKey](ctx, q.db, "signing key", keyID,
		`UPDATE signing_keys SET status = 'revoked', revoked_at = $3, compromised_at = $4, revocation_reason = $5
		WHERE tenant_id = $1 AND key_id = $2 RETURNING `+signingKeyColumns, tenantID, keyID, revokedAt, compromisedAt, reason)
}

// ListTenantSigningKeys returns the tenant's keys, oldest first, and then
// the platform's legacy keys (tenant_id null), which signed receipts of
// every tenant before tenants had keys.
func (q *Queries) ListTenantSigningKeys(ctx context.Context, tenantID uuid.UUID) ([]bpctype.SigningKey, error) {
	return list[bpctype.SigningKey](ctx, q.db, "signing keys",
		`SELECT `+signingKeyColumns+` FROM signing_keys WHERE tenant_id = $1 OR tenant_id IS NULL
		ORDER BY tenant_id IS NULL, created_at, key_id`, tenantID)
}

// ListPlatformSigningKeys returns the platform's legacy keys.
func (q *Queries) ListPlatformSigningKeys(ctx context.Context) ([]bpctype.SigningKey, error) {
	return list[bpctype.SigningKey](ctx, q.db, "signing keys",
		`SELECT `+signingKeyColumns+` FROM signing_keys WHERE tenant_id IS NULL ORDER BY created_at, key_id`)
}

// Now is the database's clock as this transaction reads it (now(): the
// transaction's start), the clock signed_at is written with: a
// revocation's default compromise time is taken from it, so that an
// application clock ahead of the database cannot let versions signed just
// after a revocation verify.
func (q *Queries) Now(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := q.db.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("error reading the database's clock: %w", err)
	}
	return now, nil
}
