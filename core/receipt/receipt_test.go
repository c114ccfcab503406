package receipt_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/receipt"
)

// fixture is a complete unsigned receipt; issued_at comes from a time in
// another zone with a fraction, to show both are normalized away.
func fixture() receipt.Receipt {
	return receipt.Receipt{
		ReceiptVersion:       receipt.Version,
		IssuedAt:             receipt.FormatIssuedAt(time.Date(2026, 11, 22, 11, 0, 0, 999_999_999, time.FixedZone("CET", 3600))),
		TenantID:             "00000000-0000-0000-0000-00000000de00",
		PassportVersionID:    "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",
		PassportID:           "1d2e3f40-5162-4738-89a0-b1c2d3e4f506",
		BatteryProductID:     "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
		SnapshotID:           "0b6f4a52-7c1e-4e8d-9a3b-5f2c1d0e9a87",
		SnapshotHash:         "00af8f9bd8f31117ec08196c9d53b1d5ebabb09ae53d4a16d08adb36adfe26ca",
		RulePackageVersionID: "7e8f9a0b-1c2d-4e3f-8a5b-6c7d8e9f0a1b",
		DSLSHA256:            strings.Repeat("d5", 32),
		TestsSHA256:          strings.Repeat("7e", 32),
		CompilerBuildID:      "bpc-compiler@1.0.0+g1a2b3c4",
		PayloadHash:          "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862",
		ProofRootHash:        "43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777",
		SignatureAlg:         receipt.SignatureAlg,
		SigningKeyID:         "dev-key-1",
	}
}

// goldenUnsigned is written out by hand: the fixture's keys in byte order, no
// signature key, no whitespace.
const goldenUnsigned = `{` +
	`"battery_product_id":"a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",` +
	`"compiler_build_id":"bpc-compiler@1.0.0+g1a2b3c4",` +
	`"dsl_sha256":"d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5",` +
	`"issued_at":"2026-11-22T10:00:00Z",` +
	`"passport_id":"1d2e3f40-5162-4738-89a0-b1c2d3e4f506",` +
	`"passport_version_id":"6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f",` +
	`"payload_hash":"015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862",` +
	`"proof_root_hash":"43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777",` +
	`"receipt_version":"BPC-RECEIPT-1",` +
	`"rule_package_version_id":"7e8f9a0b-1c2d-4e3f-8a5b-6c7d8e9f0a1b",` +
	`"signature_alg":"ED25519",` +
	`"signing_key_id":"dev-key-1",` +
	`"snapshot_hash":"00af8f9bd8f31117ec08196c9d53b1d5ebabb09ae53d4a16d08adb36adfe26ca",` +
	`"snapshot_id":"0b6f4a52-7c1e-4e8d-9a3b-5f2c1d0e9a87",` +
	`"tenant_id":"00000000-0000-0000-0000-00000000de00",` +
	`"tests_sha256":"7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e"` +
	`}`

// A syntactically valid Ed25519 signature (64 bytes); the receipt package
// does not verify signatures, core/sign does.
var testSignature = base64.StdEncoding.EncodeToString([]byte(strings.Repeat("S", 64)))

func goldenSigned() string {
	// "signature" sorts right before "signature_alg".
	return strings.Replace(goldenUnsigned, `"signature_alg"`, `"signature":"`+testSignature+`","signature_alg"`, 1)
}

func TestUnsignedCanonicalGolden(t *testing.T) {
	t.Parallel()
	got, err := receipt.UnsignedCanonical(fixture())
	require.NoError(t, err)
	require.Equal(t, goldenUnsigned, string(got))

	sum := sha256.Sum256([]byte(goldenUnsigned))
	hexHash, raw, err := receipt.Hash(fixture())
	require.NoError(t, err)
	require.Equal(t, hex.EncodeToString(sum[:]), hexHash)
	require.Equal(t, sum, raw)
	// Pinned (also computed with Python json.dumps sort_keys + hashlib) so
	// that a change of format is visible in review.
	require.Equal(t, "ce2eb72c91b969fe56c553e33f114e4eba36f2ec1379d7be371daefa4e1edeb3", hexHash)
}

func TestSignatureNeverEntersTheHash(t *testing.T) {
	t.Parallel()
	unsignedHex, unsignedRaw, err := receipt.Hash(fixture())
	require.NoError(t, err)

	signed := fixture()
	signed.Signature = testSignature
	signedHex, signedRaw, err := receipt.Hash(signed)
	require.NoError(t, err)
	require.Equal(t, unsignedHex, signedHex)
	require.Equal(t, unsignedRaw, signedRaw)

	b, err := receipt.UnsignedCanonical(signed)
	require.NoError(t, err)
	require.Equal(t, goldenUnsigned, string(b), "the signature is dropped, not blanked")
	require.NotContains(t, string(b), `"signature"`)
}

func TestSignedCanonical(t *testing.T) {
	t.Parallel()
	r := fixture()
	_, err := receipt.SignedCanonical(r)
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
	require.Equal(t, "signature", errcode.As(err).Field)

	r.Signature = testSignature
	got, err := receipt.SignedCanonical(r)
	require.NoError(t, err)
	require.Equal(t, goldenSigned(), string(got))

	r.Signature = "not base64!"
	_, err = receipt.SignedCanonical(r)
	require.Equal(t, "signature", errcode.As(err).Field)
}

func TestHashChangesWithEveryField(t *testing.T) {
	t.Parallel()
	base, _, err := receipt.Hash(fixture())
	require.NoError(t, err)
	otherUUID := "ffffffff-ffff-4fff-bfff-ffffffffffff"
	otherHash := strings.Repeat("ee", 32)
	tests := []struct {
		field  string
		mutate func(*receipt.Receipt)
	}{
		{"issued_at", func(r *receipt.Receipt) { r.IssuedAt = "2026-11-22T10:00:01Z" }},
		{"tenant_id", func(r *receipt.Receipt) { r.TenantID = otherUUID }},
		{"passport_version_id", func(r *receipt.Receipt) { r.PassportVersionID = otherUUID }},
		{"passport_id", func(r *receipt.Receipt) { r.PassportID = otherUUID }},
		{"battery_product_id", func(r *receipt.Receipt) { r.BatteryProductID = otherUUID }},
		{"snapshot_id", func(r *receipt.Receipt) { r.SnapshotID = otherUUID }},
		{"snapshot_hash", func(r *receipt.Receipt) { r.SnapshotHash = otherHash }},
		{"rule_package_version_id", func(r *receipt.Receipt) { r.RulePackageVersionID = otherUUID }},
		{"dsl_sha256", func(r *receipt.Receipt) { r.DSLSHA256 = otherHash }},
		{"tests_sha256", func(r *receipt.Receipt) { r.TestsSHA256 = otherHash }},
		{"compiler_build_id", func(r *receipt.Receipt) { r.CompilerBuildID = "bpc-compiler@1.0.1" }},
		{"payload_hash", func(r *receipt.Receipt) { r.PayloadHash = otherHash }},
		{"proof_root_hash", func(r *receipt.Receipt) { r.ProofRootHash = otherHash }},
		{"signing_key_id", func(r *receipt.Receipt) { r.SigningKeyID = "prod-key-2" }},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			t.Parallel()
			r := fixture()
			tt.mutate(&r)
			got, _, err := receipt.Hash(r)
			require.NoError(t, err)
			require.NotEqual(t, base, got)
		})
	}
}

func TestFormatIssuedAt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   time.Time
		want string
	}{
		{"utc", time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), "2026-11-22T10:00:00Z"},
		{"fraction truncated", time.Date(2026, 11, 22, 10, 0, 59, 999_999_999, time.UTC), "2026-11-22T10:00:59Z"},
		{"zone converted", time.Date(2026, 11, 22, 0, 30, 0, 0, time.FixedZone("EST", -5*3600)), "2026-11-22T05:30:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, receipt.FormatIssuedAt(tt.in))
		})
	}
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		field  string
		mutate func(*receipt.Receipt)
	}{
		{"receipt_version", func(r *receipt.Receipt) { r.ReceiptVersion = "BPC-RECEIPT-2" }},
		{"issued_at", func(r *receipt.Receipt) { r.IssuedAt = "" }},
		{"issued_at", func(r *receipt.Receipt) { r.IssuedAt = "2026-11-22T10:00:00.5Z" }},
		{"issued_at", func(r *receipt.Receipt) { r.IssuedAt = "2026-11-22T11:00:00+01:00" }},
		{"issued_at", func(r *receipt.Receipt) { r.IssuedAt = "2026-11-22 10:00:00Z" }},
		{"tenant_id", func(r *receipt.Receipt) { r.TenantID = "" }},
		{"passport_version_id", func(r *receipt.Receipt) { r.PassportVersionID = strings.ToUpper(r.PassportVersionID) }},
		{"passport_id", func(r *receipt.Receipt) { r.PassportID = "1d2e3f40x5162-4738-89a0-b1c2d3e4f506" }},
		{"battery_product_id", func(r *receipt.Receipt) { r.BatteryProductID = "a1b2c3d4" }},
		{"snapshot_id", func(r *receipt.Receipt) { r.SnapshotID = "0b6f4a52-7c1e-4e8d-9a3b-5f2c1d0e9a8g" }},
		{"rule_package_version_id", func(r *receipt.Receipt) { r.RulePackageVersionID = "{7e8f9a0b-1c2d-4e3f-8a5b-6c7d8e9f0a1}" }},
		{"snapshot_hash", func(r *receipt.Receipt) { r.SnapshotHash = "" }},
		{"dsl_sha256", func(r *receipt.Receipt) { r.DSLSHA256 = strings.ToUpper(r.DSLSHA256) }},
		{"tests_sha256", func(r *receipt.Receipt) { r.TestsSHA256 = r.TestsSHA256[:62] }},
		{"payload_hash", func(r *receipt.Receipt) { r.PayloadHash += "00" }},
		{"proof_root_hash", func(r *receipt.Receipt) { r.ProofRootHash = strings.Repeat("z", 64) }},
		{"compiler_build_id", func(r *receipt.Receipt) { r.CompilerBuildID = "" }},
		{"compiler_build_id", func(r *receipt.Receipt) { r.CompilerBuildID = "build\xff" }},
		{"signing_key_id", func(r *receipt.Receipt) { r.SigningKeyID = "" }},
		{"signature_alg", func(r *receipt.Receipt) { r.SignatureAlg = "ed25519" }},
		{"signature", func(r *receipt.Receipt) { r.Signature = base64.StdEncoding.EncodeToString(make([]byte, 63)) }},
		{"signature", func(r *receipt.Receipt) { r.Signature = base64.RawStdEncoding.EncodeToString(make([]byte, 64)) }},
		{"signature", func(r *receipt.Receipt) {
			r.Signature = base64.URLEncoding.EncodeToString([]byte(strings.Repeat("\xff", 64)))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			t.Parallel()
			r := fixture()
			tt.mutate(&r)
			for name, err := range map[string]error{
				"Validate":          receipt.Validate(r),
				"UnsignedCanonical": second(receipt.UnsignedCanonical(r)),
				"Hash":              third(receipt.Hash(r)),
			} {
				if tt.field == "signature" && name != "Validate" {
					// The unsigned form ignores the signature.
					require.NoError(t, err, name)
					continue
				}
				e := errcode.As(err)
				require.NotNil(t, e, name)
				require.Equal(t, errcode.Validation, e.Code, name)
				require.Equal(t, tt.field, e.Field, name)
				require.Contains(t, e.Error(), tt.field, name)
			}
		})
	}
	require.NoError(t, receipt.Validate(fixture()))
}

func second[T any](_ T, err error) error { return err }

func third[T, U any](_ T, _ U, err error) error { return err }

func TestParseRoundTrip(t *testing.T) {
	t.Parallel()
	got, err := receipt.Parse([]byte(goldenUnsigned))
	require.NoError(t, err)
	require.Equal(t, fixture(), got)

	signed := fixture()
	signed.Signature = testSignature
	got, err = receipt.Parse([]byte(goldenSigned()))
	require.NoError(t, err)
	require.Equal(t, signed, got)
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	replace := func(old, new string) string {
		require.Contains(t, goldenUnsigned, old)
		return strings.Replace(goldenUnsigned, old, new, 1)
	}
	tests := []struct {
		name  string
		in    string
		field string
		msg   string
	}{
		{"empty", ``, "receipt", "not valid BPC-CJSON-1"},
		{"not json", `receipt`, "receipt", "not valid BPC-CJSON-1"},
		{"float", `{"a":1.5}`, "receipt", "not valid BPC-CJSON-1"},
		{"whitespace", strings.Replace(goldenUnsigned, `,`, `, `, 1), "receipt", "canonical form"},
		{"keys out of order", `{"tenant_id":"x","receipt_version":"BPC-RECEIPT-1"}`, "receipt", "canonical form"},
		{"array", `[]`, "receipt", "not a JSON object"},
		{"no version", `{}`, "receipt_version", "<missing>"},
		{"other version", replace(`"BPC-RECEIPT-1"`, `"BPC-RECEIPT-2"`), "receipt_version", `got "BPC-RECEIPT-2"`},
		{"version not a string", replace(`"BPC-RECEIPT-1"`, `1`), "receipt", "not a JSON object"},
		{"unknown field", strings.TrimSuffix(goldenUnsigned, `}`) + `,"zone":"eu"}`, "receipt", "unknown field"},
		{"wrong type", replace(`"dev-key-1"`, `7`), "receipt", "not a BPC-RECEIPT-1 object"},
		{"missing field", replace(`"compiler_build_id":"bpc-compiler@1.0.0+g1a2b3c4",`, ``), "compiler_build_id", "must not be empty"},
		{"null field", replace(`"bpc-compiler@1.0.0+g1a2b3c4"`, `null`), "compiler_build_id", "must not be empty"},
		{"invalid field", replace(`"2026-11-22T10:00:00Z"`, `"2026-11-22T10:00:00+00:00"`), "issued_at", "whole seconds"},
		{"case-folded key", replace(`"battery_product_id"`, `"BATTERY_PRODUCT_ID"`), "receipt", "do not match BPC-RECEIPT-1 exactly"},
		{"empty signature key", replace(`"signature_alg"`, `"signature":"","signature_alg"`), "receipt", "do not match BPC-RECEIPT-1 exactly"},
		{"bad signature", replace(`"signature_alg"`, `"signature":"AAAA","signature_alg"`), "signature", "64-byte"},
		{"trailing data", goldenUnsigned + `{}`, "receipt", "not valid BPC-CJSON-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := receipt.Parse([]byte(tt.in))
			require.Equal(t, receipt.Receipt{}, got)
			e := errcode.As(err)
			require.NotNil(t, e, "error %v", err)
			require.Equal(t, errcode.Validation, e.Code)
			require.Equal(t, tt.field, e.Field)
			require.Contains(t, e.Error(), tt.msg)
		})
	}
	_, err := receipt.Parse([]byte(`{"a":1.5}`))
	require.ErrorIs(t, err, canonjson.ErrNonInteger, "the canonjson cause is kept")
}

func TestCheckSize(t *testing.T) {
	t.Parallel()
	b := []byte(goldenUnsigned)
	require.NoError(t, receipt.CheckSize(b, receipt.MaxBytes))
	require.NoError(t, receipt.CheckSize(b, len(b)), "a receipt exactly at the limit is allowed")

	err := receipt.CheckSize(b, len(b)-1)
	e := errcode.As(err)
	require.NotNil(t, e)
	require.Equal(t, errcode.ReceiptTooLarge, e.Code)
	require.Equal(t, map[string]any{"size": len(b), "limit": len(b) - 1}, e.Details)
	require.Contains(t, e.Error(), "limit is")

	require.Equal(t, errcode.Validation, errcode.CodeOf(receipt.CheckSize(b, 0)))
}
