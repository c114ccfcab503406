// Package receipt builds, hashes and parses BPC-RECEIPT-1 compile receipts.
//
// A receipt is a flat JSON object of strings: receipt_version
// ("BPC-RECEIPT-1"), issued_at (RFC 3339 UTC, whole seconds, e.g.
// "2026-11-22T10:00:00Z"), the ids of tenant, passport version, passport,
// battery product, snapshot and rule package version (lowercase UUIDs), the
// lowercase hex SHA-256 of the snapshot, rules DSL, rule tests, payload and
// proof root, compiler_build_id, signature_alg ("ED25519"), signing_key_id and
// signature (standard base64 of the 64-byte Ed25519 signature).
//
// receipt_hash is the SHA-256 of the BPC-CJSON-1 canonical receipt WITHOUT the
// signature key; the signature is Ed25519 over those 32 raw hash bytes, so it
// never enters the hash. The signed form is the same canonical object with the
// signature key added.
//
// The package is pure: no I/O, no clock (issued_at is an input), no randomness.
package receipt

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
)

// Version is the receipt_version of every BPC-RECEIPT-1 receipt.
const Version = "BPC-RECEIPT-1"

// SignatureAlg is the only signature_alg BPC-RECEIPT-1 allows.
const SignatureAlg = "ED25519"

// TimeFormat is the layout of issued_at: RFC 3339 in UTC with whole seconds.
const TimeFormat = "2006-01-02T15:04:05Z"

// MaxBytes is the SPEC default limit on the canonical receipt size (BPC_RECEIPT_MAX_BYTES).
const MaxBytes = 16384

// signatureLen is the length of an Ed25519 signature in bytes.
const signatureLen = 64

// Receipt is a BPC-RECEIPT-1 receipt. Signature is empty until the receipt is signed.
type Receipt struct {
	ReceiptVersion       string `json:"receipt_version"`
	IssuedAt             string `json:"issued_at"`
	TenantID             string `json:"tenant_id"`
	PassportVersionID    string `json:"passport_version_id"`
	PassportID           string `json:"passport_id"`
	BatteryProductID     string `json:"battery_product_id"`
	SnapshotID           string `json:"snapshot_id"`
	SnapshotHash         string `json:"snapshot_hash"`
	RulePackageVersionID string `json:"rule_package_version_id"`
	DSLSHA256            string `json:"dsl_sha256"`
	TestsSHA256          string `json:"tests_sha256"`
	CompilerBuildID      string `json:"compiler_build_id"`
	PayloadHash          string `json:"payload_hash"`
	ProofRootHash        string `json:"proof_root_hash"`
	SignatureAlg         string `json:"signature_alg"`
	SigningKeyID         string `json:"signing_key_id"`
	// Signature is omitted from the encoding while empty: the unsigned
	// receipt, which receipt_hash covers, has no signature key at all.
	Signature string `json:"signature,omitempty"`
}

// FormatIssuedAt formats t as an issued_at value: UTC, whole seconds (the
// fraction is truncated, not rounded).
func FormatIssuedAt(t time.Time) string {
	return t.UTC().Truncate(time.Second).Format(TimeFormat)
}

// Validate checks every field of r and returns a VALIDATION_ERROR naming the
// first offending JSON field. An empty signature is valid (unsigned receipt).
func Validate(r Receipt) error {
	if r.ReceiptVersion != Version {
		return errcode.Invalid("receipt_version", "must be %q, got %q", Version, r.ReceiptVersion)
	}
	if t, err := time.Parse(TimeFormat, r.IssuedAt); err != nil || t.Format(TimeFormat) != r.IssuedAt {
		return errcode.Invalid("issued_at", "must be RFC 3339 UTC with whole seconds like 2026-11-22T10:00:00Z, got %q", r.IssuedAt)
	}
	if err := CheckUUIDs([]Field{
		{"tenant_id", r.TenantID},
		{"passport_version_id", r.PassportVersionID},
		{"passport_id", r.PassportID},
		{"battery_product_id", r.BatteryProductID},
		{"snapshot_id", r.SnapshotID},
		{"rule_package_version_id", r.RulePackageVersionID},
	}); err != nil {
		return err
	}
	if err := checkDigests([]Field{
		{"snapshot_hash", r.SnapshotHash},
		{"dsl_sha256", r.DSLSHA256},
		{"tests_sha256", r.TestsSHA256},
		{"payload_hash", r.PayloadHash},
		{"proof_root_hash", r.ProofRootHash},
	}); err != nil {
		return err
	}
	if err := CheckTexts([]Field{
		{"compiler_build_id", r.CompilerBuildID},
		{"signing_key_id", r.SigningKeyID},
	}); err != nil {
		return err
	}
	if r.SignatureAlg != SignatureAlg {
		return errcode.Invalid("signature_alg", "must be %q, got %q", SignatureAlg, r.SignatureAlg)
	}
	if r.Signature != "" {
		sig, err := base64.StdEncoding.Strict().DecodeString(r.Signature)
		if err != nil || len(sig) != signatureLen {
			return errcode.Invalid("signature", "must be standard padded base64 of a %d-byte Ed25519 signature", signatureLen)
		}
	}
	return nil
}

// Field is a string field by its JSON name. CheckUUIDs, CheckTexts and
// checkDigests check fields in order and name the first one that fails;
// Validate checks a receipt's fields with them, and the compiler the ids of
// its input, which the receipt will carry.
type Field struct{ Name, Value string }

// CheckUUIDs returns a VALIDATION_ERROR naming the first field that is not a
// lowercase UUID.
func CheckUUIDs(fields []Field) error {
	for _, f := range fields {
		if !hash.IsUUID(f.Value) {
			return errcode.Invalid(f.Name, "must be a lowercase UUID, got %q", f.Value)
		}
	}
	return nil
}

// checkDigests returns a VALIDATION_ERROR naming the first field that is not
// a lowercase hex SHA-256.
func checkDigests(fields []Field) error {
	for _, f := range fields {
		if !hash.IsDigestHex(f.Value) {
			return errcode.Invalid(f.Name, "must be 64 lowercase hex characters, got %q", f.Value)
		}
	}
	return nil
}

// CheckTexts returns a VALIDATION_ERROR naming the first field that is empty
// or not valid UTF-8 (encoding/json would silently replace invalid bytes, so
// two different ids could hash alike).
func CheckTexts(fields []Field) error {
	for _, f := range fields {
		if f.Value == "" {
			return errcode.Invalid(f.Name, "must not be empty")
		}
		if !utf8.ValidString(f.Value) {
			return errcode.Invalid(f.Name, "must be valid UTF-8")
		}
	}
	return nil
}

// UnsignedCanonical returns the canonical bytes of r without the signature
// key; these are the bytes receipt_hash is computed over. r must be valid;
// its Signature, if any, is ignored.
func UnsignedCanonical(r Receipt) ([]byte, error) {
	r.Signature = ""
	if err := Validate(r); err != nil {
		return nil, err
	}
	b, err := canonjson.Marshal(r)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "error encoding receipt: %s", err)
	}
	return b, nil
}

// Hash returns receipt_hash: the SHA-256 of UnsignedCanonical(r), as lowercase
// hex and as the 32 raw bytes that get signed.
func Hash(r Receipt) (hexHash string, raw [32]byte, err error) {
	b, err := UnsignedCanonical(r)
	if err != nil {
		return "", raw, err
	}
	raw = hash.SHA256(b)
	return hash.SHA256Hex(b), raw, nil
}

// SignedCanonical returns the canonical bytes of r including the signature
// key. r must be valid and signed.
func SignedCanonical(r Receipt) ([]byte, error) {
	if r.Signature == "" {
		return nil, errcode.Invalid("signature", "must not be empty in a signed receipt")
	}
	if err := Validate(r); err != nil {
		return nil, err
	}
	b, err := canonjson.Marshal(r)
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "error encoding receipt: %s", err)
	}
	return b, nil
}

// Parse decodes a receipt from its canonical bytes, signed (with a signature
// key) or unsigned (without one). The bytes must be BPC-CJSON-1 canonical,
// carry receipt_version BPC-RECEIPT-1, hold exactly the receipt's fields and
// pass Validate; anything else is a VALIDATION_ERROR.
func Parse(canonical []byte) (Receipt, error) {
	canon, err := canonjson.Canonicalize(canonical)
	if err != nil {
		return Receipt{}, errcode.InvalidWrap("receipt", err, "not valid BPC-CJSON-1: %s", err)
	}
	if !bytes.Equal(canon, canonical) {
		return Receipt{}, errcode.Invalid("receipt", "not in BPC-CJSON-1 canonical form")
	}
	// Check the version first so that a receipt of another version is reported
	// as such rather than as carrying unknown fields.
	var head struct {
		ReceiptVersion *string `json:"receipt_version"`
	}
	if err := json.Unmarshal(canonical, &head); err != nil {
		return Receipt{}, errcode.InvalidWrap("receipt", err, "not a JSON object: %s", err)
	}
	if head.ReceiptVersion == nil || *head.ReceiptVersion != Version {
		got := "<missing>"
		if head.ReceiptVersion != nil {
			got = fmt.Sprintf("%q", *head.ReceiptVersion)
		}
		return Receipt{}, errcode.Invalid("receipt_version", "must be %q, got %s", Version, got)
	}
	var r Receipt
	dec := json.NewDecoder(bytes.NewReader(canonical))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Receipt{}, errcode.InvalidWrap("receipt", err, "not a BPC-RECEIPT-1 object: %s", err)
	}
	if err := Validate(r); err != nil {
		return Receipt{}, err
	}
	// Re-encoding catches what decoding tolerates: missing or null fields,
	// keys that differ only in case, and an empty signature key.
	var again []byte
	if r.Signature == "" {
		again, err = UnsignedCanonical(r)
	} else {
		again, err = SignedCanonical(r)
	}
	if err != nil {
		return Receipt{}, err
	}
	if !bytes.Equal(again, canonical) {
		return Receipt{}, errcode.Invalid("receipt", "fields do not match BPC-RECEIPT-1 exactly (missing, null, misspelled or empty signature)")
	}
	return r, nil
}

// CheckSize returns RECEIPT_TOO_LARGE when the canonical receipt b is longer
// than limit bytes; details carry "size" and "limit".
func CheckSize(b []byte, limit int) error {
	if limit <= 0 {
		return errcode.Invalid("limit", "receipt size limit must be positive, got %d", limit)
	}
	if len(b) > limit {
		e := errcode.New(errcode.ReceiptTooLarge, "receipt is %d bytes, limit is %d", len(b), limit)
		e.Details = map[string]any{"size": len(b), "limit": limit}
		return e
	}
	return nil
}
