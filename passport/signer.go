package passport

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/store"
)

// Signer holds the platform's legacy Ed25519 key, which signs the receipts
// compiled under its id before tenants had keys (Keyring.SigningKeyFor). A
// Signer without a key signs nothing: such a receipt fails SIGNING_KEY_MISSING.
type Signer struct {
	// KeyID is BPC_SIGNING_KEY_ID, the signing_key_id such receipts name.
	KeyID string
	key   ed25519.PrivateKey
	// Source says where the key came from: "env", "dev-generated",
	// "dev-database" or "" (none).
	Source string
}

// NewSigner returns a signer for a given private key (tests, tools).
func NewSigner(keyID string, key ed25519.PrivateKey) *Signer {
	return &Signer{KeyID: keyID, key: key, Source: "env"}
}

// Key returns the private key or SIGNING_KEY_MISSING.
func (s *Signer) Key() (ed25519.PrivateKey, error) {
	if s == nil || s.key == nil {
		return nil, errcode.New(errcode.SigningKeyMissing,
			"no signing key is configured (BPC_SIGNING_ED25519_PRIVATE_KEY_BASE64)")
	}
	return s.key, nil
}

// PublicKeyBase64 returns the public key in base64, or "" without a key.
func (s *Signer) PublicKeyBase64() string {
	if s == nil || s.key == nil {
		return ""
	}
	return sign.PublicKeyBase64(s.key.Public().(ed25519.PublicKey))
}

// LoadSigner resolves the platform's legacy signing key at start (SPEC
// §16: it signed every tenant's receipts before tenants had keys of their
// own; it signs only versions compiled under its id, and what it signed
// keeps verifying):
//   - keyBase64 set: parse it (a bad key stops the start with an error that
//     names the variable but never echoes the key) and register its public
//     key under keyID (a NULL-tenant row), refusing a different key under an
//     id already used;
//   - dev without a key: the key an earlier release generated for this
//     database under keyID, if there is one; no new one is generated;
//   - otherwise: no legacy key; a version naming it fails
//     SIGNING_KEY_MISSING.
func LoadSigner(ctx context.Context, st *store.Queries, env, keyID, keyBase64 string) (*Signer, error) {
	if keyBase64 != "" {
		key, err := sign.ParsePrivateKey(keyBase64)
		if err != nil {
			return nil, fmt.Errorf("BPC_SIGNING_ED25519_PRIVATE_KEY_BASE64: %w", err)
		}
		s := &Signer{KeyID: keyID, key: key, Source: "env"}
		if err := st.RegisterSigningKey(ctx, keyID, s.PublicKeyBase64()); err != nil {
			return nil, fmt.Errorf("BPC_SIGNING_KEY_ID: %w", err)
		}
		return s, nil
	}
	if env != "dev" {
		return &Signer{KeyID: keyID}, nil
	}
	seed, err := st.DevSigningSeed(ctx, keyID)
	if errors.Is(err, store.ErrNotFound) {
		return &Signer{KeyID: keyID}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("BPC_SIGNING_KEY_ID: %w", err)
	}
	key, err := sign.ParsePrivateKey(seed)
	if err != nil {
		return nil, fmt.Errorf("the dev signing key stored for %s is unreadable: %w", keyID, err)
	}
	return &Signer{KeyID: keyID, key: key, Source: "dev-database"}, nil
}
