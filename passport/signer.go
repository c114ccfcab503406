package passport

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/sign"
	"github.com/bpc-platform/bpc/store"
)

// Signer holds the Ed25519 key SIGN_PASSPORT signs receipts with. A Signer
// without a key makes SIGN_PASSPORT fail with SIGNING_KEY_MISSING.
type Signer struct {
	// KeyID is BPC_SIGNING_KEY_ID, the signing_key_id compiled into receipts.
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

// LoadSigner resolves the signing key at start:
//   - keyBase64 set: parse it (a bad key stops the start with an error that
//     names the variable but never echoes the key) and register its public
//     key under keyID, refusing a different key under an id already used;
//   - dev without a key: reuse the key generated for this database earlier,
//     or generate one and keep its seed in the database, so that restarts
//     sign with the same key and old signatures stay verifiable;
//   - otherwise (test, prod): no key; SIGN_PASSPORT fails with
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
	source := "dev-database"
	if errors.Is(err, store.ErrNotFound) {
		fresh := make([]byte, ed25519.SeedSize)
		if _, err := rand.Read(fresh); err != nil {
			return nil, fmt.Errorf("error generating a dev signing key: %w", err)
		}
		pub := ed25519.NewKeyFromSeed(fresh).Public().(ed25519.PublicKey)
		seed, err = st.StoreDevSigningKey(ctx, keyID, sign.PublicKeyBase64(pub), base64.StdEncoding.EncodeToString(fresh))
		source = "dev-generated"
	}
	if err != nil {
		return nil, fmt.Errorf("BPC_SIGNING_KEY_ID: %w", err)
	}
	key, err := sign.ParsePrivateKey(seed)
	if err != nil {
		return nil, fmt.Errorf("the dev signing key stored for %s is unreadable: %w", keyID, err)
	}
	return &Signer{KeyID: keyID, key: key, Source: source}, nil
}

// KeyIDOrDefault returns the signer's key id, or dev-key-1 without a signer.
func (s *Signer) KeyIDOrDefault() string {
	if s == nil || s.KeyID == "" {
		return "dev-key-1"
	}
	return s.KeyID
}
