package verify

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/sign"
)

// Key is a signing key as a key document names it.
type Key struct {
	KeyID     string
	PublicKey ed25519.PublicKey
}

// keyDocument is the JSON of a key document. alg is optional so that an item
// of the service's signing key list and an export's signing_key read as key
// documents too.
type keyDocument struct {
	KeyID           string `json:"key_id"`
	Alg             string `json:"alg,omitempty"`
	PublicKeyBase64 string `json:"public_key_base64"`
}

// KeyDocument returns the key document of a signing key: indented JSON
// {"key_id", "public_key_base64"} and a final newline, the content of
// signing-key.json.
func KeyDocument(keyID string, pub ed25519.PublicKey) []byte {
	b, err := json.MarshalIndent(keyDocument{KeyID: keyID, PublicKeyBase64: sign.PublicKeyBase64(pub)}, "", "  ")
	if err != nil {
		// Two strings always encode.
		panic(err)
	}
	return append(b, '\n')
}

// ParseKeyDocument reads a key document: a JSON object with key_id,
// public_key_base64 (the 32-byte Ed25519 key in standard padded base64) and
// optionally alg, which must then be ED25519. Other members are refused.
func ParseKeyDocument(doc []byte) (Key, error) {
	var k keyDocument
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&k); err != nil {
		return Key{}, err
	}
	if len(bytes.Trim(doc[dec.InputOffset():], " \t\r\n")) > 0 {
		return Key{}, errors.New("something follows the JSON object")
	}
	if k.KeyID == "" {
		return Key{}, errors.New("no key_id")
	}
	if k.Alg != "" && k.Alg != receipt.SignatureAlg {
		return Key{}, fmt.Errorf("alg is %q, want %s", k.Alg, receipt.SignatureAlg)
	}
	pub, err := sign.ParsePublicKey(k.PublicKeyBase64)
	// One spelling per key: the key must be written as PublicKeyBase64 writes it.
	if err != nil || sign.PublicKeyBase64(pub) != k.PublicKeyBase64 {
		return Key{}, fmt.Errorf("public_key_base64 is not standard base64 of %d bytes", ed25519.PublicKeySize)
	}
	return Key{KeyID: k.KeyID, PublicKey: pub}, nil
}

// publicKeyPEM encodes pub as a PEM "PUBLIC KEY" block (PKIX), the form
// openssl reads.
func publicKeyPEM(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("error encoding the public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// parsePublicKeyPEM decodes a single PEM "PUBLIC KEY" block holding an
// Ed25519 key.
func parsePublicKeyPEM(b []byte) (ed25519.PublicKey, error) {
	block, rest := pem.Decode(b)
	if block == nil || block.Type != "PUBLIC KEY" || len(bytes.TrimSpace(rest)) > 0 {
		return nil, errors.New("not a single PUBLIC KEY PEM block")
	}
	parsed, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	pub, ok := parsed.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("holds a %T, not an Ed25519 key", parsed)
	}
	return pub, nil
}
