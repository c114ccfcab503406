package passport

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/store"
)

// KeyEncryptionKeySize is the size of BPC_KEY_ENCRYPTION_KEY: an AES-256
// key.
const KeyEncryptionKeySize = 32

// TestKeyEncryptionKey is the key encryption key of BPC_ENV=test without
// BPC_KEY_ENCRYPTION_KEY, and of the test helpers: fixed, so that a test
// database's keys open after a restart, and public, so never a protection
// (prod requires its own).
func TestKeyEncryptionKey() []byte {
	k := sha256.Sum256([]byte("bpc test key encryption key; not a secret"))
	return k[:]
}

// The audit events of a tenant's signing keys (SPEC §16), on the tenant's
// event chain (aggregate Tenant, the tenant's id). Their payloads hold key
// ids, public keys and times, never private material.
const (
	EventSigningKeyCreated = "signing_key.created"
	EventSigningKeyRotated = "signing_key.rotated"
	EventSigningKeyRevoked = "signing_key.revoked"
)

// ErrKeyDecrypt is the cause of an error decrypting a stored private key:
// BPC_KEY_ENCRYPTION_KEY is not the key it was encrypted under, or the
// ciphertext was changed or moved to another row.
var ErrKeyDecrypt = errors.New("the stored private key does not decrypt under BPC_KEY_ENCRYPTION_KEY")

// Keyring holds the tenants' signing keys (SPEC §16): it creates a
// tenant's key on first need, encrypts private keys under the key
// encryption key (AES-256-GCM; the 12-byte nonce first; the key id and the
// tenant id as additional data, so that a ciphertext moved to another row
// does not decrypt), and signs with the key a receipt names. Legacy is the
// platform's key of before (BPC_SIGNING_ED25519_PRIVATE_KEY_BASE64), which
// signs only receipts compiled under its id. Decrypted keys are cached by
// key id for the life of the process.
type Keyring struct {
	aead   cipher.AEAD
	legacy *Signer

	mu    sync.Mutex
	cache map[string]ed25519.PrivateKey
}

// NewKeyring returns a keyring encrypting under kek (32 bytes) with legacy
// as the platform's legacy signer (nil or keyless: none). A kek of another
// size is an error that never shows the key.
func NewKeyring(kek []byte, legacy *Signer) (*Keyring, error) {
	if len(kek) != KeyEncryptionKeySize {
		return nil, fmt.Errorf("BPC_KEY_ENCRYPTION_KEY: must be %d bytes, got %d", KeyEncryptionKeySize, len(kek))
	}
	block, err := aes.NewCipher(kek)
	if err != nil {
		return nil, fmt.Errorf("BPC_KEY_ENCRYPTION_KEY: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("BPC_KEY_ENCRYPTION_KEY: %w", err)
	}
	return &Keyring{aead: aead, legacy: legacy, cache: map[string]ed25519.PrivateKey{}}, nil
}

// Legacy returns the platform's legacy signer (nil when there is none).
func (k *Keyring) Legacy() *Signer {
	if k == nil {
		return nil
	}
	return k.legacy
}

// keyAAD binds a ciphertext to its row.
func keyAAD(tenantID uuid.UUID, keyID string) []byte {
	return []byte("bpc-signing-key\x00" + tenantID.String() + "\x00" + keyID)
}

// Seal encrypts an Ed25519 seed for the key keyID of tenantID: nonce ‖
// ciphertext ‖ tag.
func (k *Keyring) Seal(tenantID uuid.UUID, keyID string, seed []byte) ([]byte, error) {
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("error generating a nonce: %w", err)
	}
	return k.aead.Seal(nonce, nonce, seed, keyAAD(tenantID, keyID)), nil
}

// Open decrypts what Seal encrypted for the same tenant and key id; any
// other key encryption key, row or a changed byte is ErrKeyDecrypt.
func (k *Keyring) Open(tenantID uuid.UUID, keyID string, sealed []byte) (ed25519.PrivateKey, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n+k.aead.Overhead() {
		return nil, ErrKeyDecrypt
	}
	seed, err := k.aead.Open(nil, sealed[:n], sealed[n:], keyAAD(tenantID, keyID))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, ErrKeyDecrypt
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// ActiveSigningKeyID returns the id of the tenant's active key, creating
// the key when the tenant has none (signing_key.created). Two transactions
// racing for a tenant without a key end with one key: the second waits for
// the tenant's row and then finds the first one's key.
func (k *Keyring) ActiveSigningKeyID(ctx context.Context, t Tx, tenantID uuid.UUID) (string, error) {
	if key, found, err := t.Q.ActiveSigningKey(ctx, tenantID); err != nil || found {
		return key.KeyID, err
	}
	slug, err := t.Q.LockTenantSigningKeys(ctx, tenantID)
	if err != nil {
		return "", err
	}
	if key, found, err := t.Q.ActiveSigningKey(ctx, tenantID); err != nil || found {
		return key.KeyID, err
	}
	key, err := k.newKey(ctx, t, tenantID, slug)
	if err != nil {
		return "", err
	}
	if err := t.Event(ctx, tenantID, AggregateTenant, tenantID, EventSigningKeyCreated, signingKeyEvent(key, nil)); err != nil {
		return "", err
	}
	return key.KeyID, nil
}

// RotateSigningKey retires the tenant's active key (if it has one) and
// makes a new active one, in t (signing_key.rotated).
func (k *Keyring) RotateSigningKey(ctx context.Context, t Tx, tenantID uuid.UUID) (bpctype.SigningKey, error) {
	slug, err := t.Q.LockTenantSigningKeys(ctx, tenantID)
	if err != nil {
		return bpctype.SigningKey{}, err
	}
	old, found, err := t.Q.ActiveSigningKey(ctx, tenantID)
	if err != nil {
		return bpctype.SigningKey{}, err
	}
	var retired *string
	if found {
		if _, err := t.Q.RetireSigningKey(ctx, tenantID, old.KeyID); err != nil {
			return bpctype.SigningKey{}, err
		}
		retired = &old.KeyID
	}
	key, err := k.newKey(ctx, t, tenantID, slug)
	if err != nil {
		return bpctype.SigningKey{}, err
	}
	if err := t.Event(ctx, tenantID, AggregateTenant, tenantID, EventSigningKeyRotated, signingKeyEvent(key, retired)); err != nil {
		return bpctype.SigningKey{}, err
	}
	return key, nil
}

func signingKeyEvent(key bpctype.SigningKey, retired *string) map[string]any {
	m := map[string]any{"key_id": key.KeyID, "alg": key.Alg, "public_key_base64": key.PublicKeyBase64}
	if retired != nil {
		m["retired_key_id"] = *retired
	}
	return m
}

// maxKeyIDTries bounds the search for a free key id: ids of the form
// <slug>-k<n> a legacy key or another tenant took are skipped.
const maxKeyIDTries = 100

// newKey generates a key and inserts it as the tenant's active key under
// the first free id <slug>-k<n>, n from the tenant's count of keys plus
// one. The tenant's row is locked.
func (k *Keyring) newKey(ctx context.Context, t Tx, tenantID uuid.UUID, slug string) (bpctype.SigningKey, error) {
	if k == nil || k.aead == nil {
		return bpctype.SigningKey{}, errcode.New(errcode.SigningKeyMissing, "no key encryption key (BPC_KEY_ENCRYPTION_KEY) to keep a new signing key under")
	}
	n, err := t.Q.CountTenantSigningKeys(ctx, tenantID)
	if err != nil {
		return bpctype.SigningKey{}, err
	}
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return bpctype.SigningKey{}, fmt.Errorf("error generating a signing key: %w", err)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := sign.PublicKeyBase64(priv.Public().(ed25519.PublicKey))
	for i := 1; i <= maxKeyIDTries; i++ {
		keyID := fmt.Sprintf("%s-k%d", slug, n+i)
		sealed, err := k.Seal(tenantID, keyID, seed)
		if err != nil {
			return bpctype.SigningKey{}, err
		}
		key, inserted, err := t.Q.InsertTenantSigningKey(ctx, tenantID, keyID, pub, sealed)
		if err != nil {
			return bpctype.SigningKey{}, err
		}
		if inserted {
			k.remember(keyID, priv)
			return key, nil
		}
	}
	return bpctype.SigningKey{}, errcode.New(errcode.Conflict, "no free signing key id %s-k<n> after %d tries", slug, maxKeyIDTries)
}

func (k *Keyring) remember(keyID string, priv ed25519.PrivateKey) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cache[keyID] = priv
}

func (k *Keyring) cached(keyID string) (ed25519.PrivateKey, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	priv, ok := k.cache[keyID]
	return priv, ok
}

// Revocation is what POST /v1/signing-keys/{key_id}/revoke asks: since
// when the key is compromised (now when nil) and why.
type Revocation struct {
	CompromisedAt *time.Time
	Reason        string
}

// MaxRevocationReason is the longest reason of a revocation, in characters.
const MaxRevocationReason = 500

// RevokeSigningKey revokes the tenant's key keyID (signing_key.revoked):
// what it signed at or after the compromise time no longer verifies, and
// a version compiled for it is not signed any more (KEY_REVOKED). Revoking
// the active key leaves the tenant without one: the next compile creates a
// fresh one. The compromise time may not be after now (VALIDATION_ERROR
// naming compromised_at); the reason is 1 to 500 printable characters (no
// control or format characters, no leading or trailing spaces). Revoking a
// revoked key may only move its compromise time earlier (with the new
// reason, another event); a time at or after the stored one changes
// nothing and answers the key as it is. Another tenant's key and the
// platform's are NOT_FOUND.
func RevokeSigningKey(ctx context.Context, t Tx, tenantID uuid.UUID, keyID string, r Revocation, now time.Time) (bpctype.SigningKey, error) {
	now = now.UTC().Truncate(time.Microsecond)
	compromised := now
	if r.CompromisedAt != nil {
		compromised = r.CompromisedAt.UTC().Truncate(time.Microsecond)
		if compromised.After(now) {
			return bpctype.SigningKey{}, errcode.Invalid("compromised_at", "must not be in the future (now is %s)", now.Format(time.RFC3339))
		}
	}
	// The reason is shown on the public pages of what the key signed: no
	// control or format characters (a bidi override would make the page
	// read otherwise than the stored text), as an issuer's name.
	if err := printable("reason", "laptop stolen", r.Reason, MaxRevocationReason); err != nil {
		return bpctype.SigningKey{}, err
	}
	if _, err := t.Q.LockTenantSigningKeys(ctx, tenantID); err != nil {
		return bpctype.SigningKey{}, err
	}
	key, err := t.Q.LockTenantSigningKey(ctx, tenantID, keyID)
	if err != nil {
		return bpctype.SigningKey{}, err
	}
	previous := key.Status
	revokedAt := now
	if key.Status == bpctype.KeyRevoked {
		if !compromised.Before(*key.CompromisedAt) {
			return key, nil
		}
		revokedAt = *key.RevokedAt
	}
	key, err = t.Q.SetSigningKeyRevoked(ctx, tenantID, keyID, revokedAt, compromised, r.Reason)
	if err != nil {
		return bpctype.SigningKey{}, err
	}
	if err := t.Event(ctx, tenantID, AggregateTenant, tenantID, EventSigningKeyRevoked, map[string]any{
		"key_id": keyID, "previous_status": previous, "compromised_at": compromised, "revoked_at": revokedAt, "reason": r.Reason,
	}); err != nil {
		return bpctype.SigningKey{}, err
	}
	return key, nil
}

// SigningKeyFor returns the private key and public key (base64) that sign a
// receipt of tenantID naming keyID:
//   - the tenant's own key, active or retired: its private key, decrypted
//     (a key encryption key that does not open it is SIGNING_KEY_MISSING
//     naming BPC_KEY_ENCRYPTION_KEY, never the key material);
//   - the tenant's revoked key: KEY_REVOKED;
//   - the platform's legacy key: the legacy signer's key when it holds
//     that id, else SIGNING_KEY_MISSING;
//   - another tenant's key or an unknown id: SIGNING_KEY_MISSING.
//
// All of these are permanent: a retry signs nothing new.
func (k *Keyring) SigningKeyFor(ctx context.Context, q *store.Queries, tenantID uuid.UUID, keyID string) (ed25519.PrivateKey, string, error) {
	row, err := q.GetSigningKey(ctx, keyID)
	if errcode.CodeOf(err) == errcode.NotFound {
		return nil, "", errcode.New(errcode.SigningKeyMissing, "the receipt names signing key %q, which is not registered", keyID)
	}
	if err != nil {
		return nil, "", err
	}
	return k.SigningKeyOf(row, tenantID)
}

// SigningKeyOf is SigningKeyFor with the key's row read already (by the
// receipt's key id).
func (k *Keyring) SigningKeyOf(row store.TenantSigningKey, tenantID uuid.UUID) (ed25519.PrivateKey, string, error) {
	keyID := row.KeyID
	switch {
	case row.TenantID == nil:
		legacy := k.Legacy()
		if legacy == nil || legacy.KeyID != keyID {
			return nil, "", errcode.New(errcode.SigningKeyMissing,
				"the receipt names the platform's signing key %q, which this worker does not hold (BPC_SIGNING_ED25519_PRIVATE_KEY_BASE64, BPC_SIGNING_KEY_ID)", keyID)
		}
		priv, err := legacy.Key()
		if err != nil {
			return nil, "", err
		}
		if legacy.PublicKeyBase64() != row.PublicKeyBase64 {
			return nil, "", errcode.New(errcode.SigningKeyMissing, "the platform's key %q is registered with another public key than this worker holds", keyID)
		}
		return priv, row.PublicKeyBase64, nil
	case *row.TenantID != tenantID:
		return nil, "", errcode.New(errcode.SigningKeyMissing, "the receipt names signing key %q, which is not this tenant's", keyID)
	case row.Status == bpctype.KeyRevoked:
		return nil, "", errcode.New(errcode.KeyRevoked, "signing key %q was revoked at %s", keyID, row.RevokedAt.UTC().Format(time.RFC3339))
	}
	if k == nil || k.aead == nil {
		return nil, "", errcode.New(errcode.SigningKeyMissing, "no key encryption key (BPC_KEY_ENCRYPTION_KEY) to open signing key %q", keyID)
	}
	if priv, ok := k.cached(keyID); ok {
		return priv, row.PublicKeyBase64, nil
	}
	priv, err := k.Open(tenantID, keyID, row.PrivateKeyEncrypted)
	if err != nil {
		return nil, "", errcode.Wrap(errcode.SigningKeyMissing, err,
			"signing key %q does not decrypt: BPC_KEY_ENCRYPTION_KEY is not the key it was stored under, or its row was altered", keyID)
	}
	if sign.PublicKeyBase64(priv.Public().(ed25519.PublicKey)) != row.PublicKeyBase64 {
		return nil, "", errcode.New(errcode.SigningKeyMissing, "signing key %q decrypts to another key than its public key", keyID)
	}
	k.remember(keyID, priv)
	return priv, row.PublicKeyBase64, nil
}
