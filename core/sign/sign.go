// Package sign signs and verifies BPC receipt hashes with Ed25519 (RFC 8032).
//
// The message signed is always the 32 raw bytes of a SHA-256 digest (the
// receipt_hash), never its hex spelling. Keys travel as base64: a private key
// as either the 32-byte seed or the 64-byte seed‖public-key form, in standard
// or URL-safe base64, padded or not; public keys and signatures are written
// in standard padded base64.
//
// Errors never contain key material. The package is pure: keys come from the
// caller, nothing is generated.
package sign

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"strings"

	"github.com/bpc-platform/bpc/core/errcode"
)

// privateKeyField and publicKeyField name the inputs in VALIDATION_ERRORs.
const (
	privateKeyField = "signing_private_key"
	publicKeyField  = "public_key"
	signatureField  = "signature"
)

// encodings are the accepted base64 spellings, tried in order. A string that
// decodes under more than one of them decodes to the same bytes under each.
var encodings = []*base64.Encoding{
	base64.StdEncoding,
	base64.RawStdEncoding,
	base64.URLEncoding,
	base64.RawURLEncoding,
}

// decodeBase64 decodes s in any of the accepted base64 spellings. On failure
// the error is that of standard base64, which names a byte offset but never
// the input.
func decodeBase64(s string) ([]byte, error) {
	var firstErr error
	for _, enc := range encodings {
		b, err := enc.DecodeString(s)
		if err == nil {
			return b, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// ParsePrivateKey decodes an Ed25519 private key from base64 (standard or
// URL-safe, padded or not; surrounding whitespace is ignored). The key is
// either a 32-byte seed or a 64-byte private key whose second half must be the
// public key of its seed. An empty key is SIGNING_KEY_MISSING; anything else
// wrong is a VALIDATION_ERROR that says what was wrong without echoing the key.
func ParsePrivateKey(b64 string) (ed25519.PrivateKey, error) {
	s := strings.TrimSpace(b64)
	if s == "" {
		return nil, errcode.New(errcode.SigningKeyMissing, "no Ed25519 signing key configured")
	}
	raw, err := decodeBase64(s)
	if err != nil {
		return nil, errcode.InvalidWrap(privateKeyField, err,
			"Ed25519 signing key is not valid base64 (standard or URL-safe, padded or not): %s", err)
	}
	switch len(raw) {
	case ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(raw), nil
	case ed25519.PrivateKeySize:
		priv := ed25519.NewKeyFromSeed(raw[:ed25519.SeedSize])
		if !bytes.Equal(priv[ed25519.SeedSize:], raw[ed25519.SeedSize:]) {
			return nil, errcode.Invalid(privateKeyField,
				"64-byte Ed25519 private key is inconsistent: its public half does not match its seed")
		}
		return priv, nil
	default:
		return nil, errcode.Invalid(privateKeyField,
			"Ed25519 signing key decodes to %d bytes, want %d (seed) or %d (private key)",
			len(raw), ed25519.SeedSize, ed25519.PrivateKeySize)
	}
}

// ParsePublicKey decodes a 32-byte Ed25519 public key from base64 (standard or
// URL-safe, padded or not); errors are VALIDATION_ERRORs.
func ParsePublicKey(b64 string) (ed25519.PublicKey, error) {
	s := strings.TrimSpace(b64)
	if s == "" {
		return nil, errcode.Invalid(publicKeyField, "must not be empty")
	}
	raw, err := decodeBase64(s)
	if err != nil {
		return nil, errcode.InvalidWrap(publicKeyField, err, "Ed25519 public key is not valid base64: %s", err)
	}
	if len(raw) != ed25519.PublicKeySize {
		return nil, errcode.Invalid(publicKeyField, "Ed25519 public key decodes to %d bytes, want %d",
			len(raw), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(raw), nil
}

// ParseSignature decodes a 64-byte Ed25519 signature from standard padded
// base64, the form SignatureBase64 writes; errors are VALIDATION_ERRORs.
func ParseSignature(b64 string) ([]byte, error) {
	raw, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil {
		return nil, errcode.InvalidWrap(signatureField, err, "Ed25519 signature is not standard padded base64: %s", err)
	}
	if len(raw) != ed25519.SignatureSize {
		return nil, errcode.Invalid(signatureField, "Ed25519 signature decodes to %d bytes, want %d",
			len(raw), ed25519.SignatureSize)
	}
	return raw, nil
}

// SignHash returns the Ed25519 signature of the 32 raw bytes of hash (not its
// hex spelling). priv must come from ParsePrivateKey; like ed25519.Sign it
// panics on a key of the wrong length.
func SignHash(priv ed25519.PrivateKey, hash [32]byte) []byte {
	return ed25519.Sign(priv, hash[:])
}

// Verify checks that sig is pub's Ed25519 signature of the 32 raw bytes of
// hash. A signature that does not verify (including one of the wrong length)
// is SIGNATURE_INVALID; a public key of the wrong length is a VALIDATION_ERROR.
func Verify(pub ed25519.PublicKey, hash [32]byte, sig []byte) error {
	if len(pub) != ed25519.PublicKeySize {
		return errcode.Invalid(publicKeyField, "Ed25519 public key is %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	if !ed25519.Verify(pub, hash[:], sig) {
		return errcode.New(errcode.SignatureInvalid, "Ed25519 signature does not verify for this hash and public key")
	}
	return nil
}

// PublicKeyBase64 returns pub in standard padded base64.
func PublicKeyBase64(pub ed25519.PublicKey) string {
	return base64.StdEncoding.EncodeToString(pub)
}

// SignatureBase64 returns sig in standard padded base64, the form stored in a
// receipt's signature field.
func SignatureBase64(sig []byte) string {
	return base64.StdEncoding.EncodeToString(sig)
}
