package bpctype

import "time"

// SigningKey is a public key that signs (or signed) passport receipts.
type SigningKey struct {
	KeyID           string    `db:"key_id" json:"key_id"`
	Alg             string    `db:"alg" json:"alg"`
	PublicKeyBase64 string    `db:"public_key_base64" json:"public_key_base64"`
	CreatedAt       time.Time `db:"created_at" json:"created_at"`
}
