package store

import (
	"context"
	"errors"
	"fmt"

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
