package compiler

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/rules"
)

// baseInput is a valid input over a one-field rule source and one fact.
func baseInput() Input {
	return Input{
		TenantID:             "6f1c2a8e-3b4d-4e5f-8a9b-0c1d2e3f4a5b",
		PassportVersionID:    "0b7e4c2a-9d1f-4a3b-8c5d-6e7f8a9b0c1d",
		PassportID:           "3c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f",
		BatteryProductID:     "a1b2c3d4-e5f6-4789-8abc-def012345678",
		SnapshotID:           "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9",
		RulePackageVersionID: "d4c3b2a1-0f9e-4d8c-b7a6-958473625140",
		Facts:                []rules.Fact{{FactType: "pcf", FactKey: "total", Payload: []byte(`{"value":"61.20"}`)}},
		DSLSource:            `field carbon.total : Dec(2) = toDec(requireSome(recordGet(requireSome(getFact("pcf", "total"), "PCF_MISSING", "no pcf"), "value"), "PCF_VALUE", "no value"), 2);`,
		TestsSource:          "",
		CompilerBuildID:      "bpc-compiler-test",
		SigningKeyID:         "dev-key-1",
		IssuedAt:             time.Date(2026, 11, 22, 10, 0, 0, 999_000_000, time.FixedZone("CET", 3600)),
	}
}

func TestCompileBase(t *testing.T) {
	t.Parallel()
	out, err := CompilePassport(baseInput())
	require.NoError(t, err)
	require.Equal(t, hash.SHA256Hex(out.Payload), out.PayloadHash)
	require.Equal(t, hash.SHA256Hex(out.Receipt), out.ReceiptHash)
	require.Equal(t, hash.SHA256(out.Receipt), out.ReceiptHashRaw)
	require.Contains(t, string(out.Payload), `"fields":{"carbon":{"total":"61.20"}}`)
	// issued_at is the input time in UTC, truncated to whole seconds.
	require.Equal(t, "2026-11-22T09:00:00Z", out.ReceiptFields.IssuedAt)
	require.Equal(t, hash.SHA256Hex(nil), out.ReceiptFields.TestsSHA256)
	require.Empty(t, out.ReceiptFields.Signature)
	require.Empty(t, out.Compliance)
	parsed, err := receipt.Parse(out.Receipt)
	require.NoError(t, err)
	require.Equal(t, out.ReceiptFields, parsed)
	require.NoError(t, VerifyProof(out.Proof))
}

// A compile given the tests' recorded digest instead of their source
// produces the same bytes.
func TestRecordedTestsDigestStandsInForTheSource(t *testing.T) {
	t.Parallel()
	in := baseInput()
	in.TestsSource = "example e: { } => expect(carbon.total, ==, 1.00);"
	fromSource, err := CompilePassport(in)
	require.NoError(t, err)
	in.TestsSHA256, in.TestsSource = hash.SHA256HexString(in.TestsSource), ""
	fromDigest, err := CompilePassport(in)
	require.NoError(t, err)
	require.Equal(t, fromSource, fromDigest)
	require.Equal(t, in.TestsSHA256, fromDigest.ReceiptFields.TestsSHA256)
}

// Changing one digit of one fact value changes the snapshot hash, the
// payload hash and the proof root; the receipt follows.
func TestOneFactByteChangesHashes(t *testing.T) {
	t.Parallel()
	in := loadFixture(t, "pcf_asserts")
	before, err := CompilePassport(in)
	require.NoError(t, err)

	changed := in
	changed.Facts = slices.Clone(in.Facts)
	i := slices.IndexFunc(changed.Facts, func(f rules.Fact) bool { return f.FactType == "bom" && f.FactKey == "mat/graphite" })
	require.GreaterOrEqual(t, i, 0)
	old := changed.Facts[i].Payload
	// "mass_g":"52000" → "mass_g":"52001": still canonical, one byte apart.
	payload := bytes.Replace(old, []byte(`"52000"`), []byte(`"52001"`), 1)
	require.Len(t, payload, len(old))
	require.Equal(t, 1, countDiff(old, payload))
	changed.Facts[i] = rules.Fact{FactType: "bom", FactKey: "mat/graphite", Payload: payload}

	after, err := CompilePassport(changed)
	require.NoError(t, err)
	require.NotEqual(t, before.SnapshotHash, after.SnapshotHash)
	require.NotEqual(t, before.PayloadHash, after.PayloadHash)
	require.NotEqual(t, before.ProofRootHash, after.ProofRootHash)
	require.NotEqual(t, before.ReceiptHash, after.ReceiptHash)
}

// A fact that no rule reads still changes the snapshot hash and, through
// it, the payload; the proof root stays, since no derivation used it.
func TestUnreadFactChangesSnapshotAndPayload(t *testing.T) {
	t.Parallel()
	in := baseInput()
	before, err := CompilePassport(in)
	require.NoError(t, err)
	in.Facts = append(slices.Clone(in.Facts), rules.Fact{FactType: "bom", FactKey: "x", Payload: []byte(`{"a":"1"}`)})
	after, err := CompilePassport(in)
	require.NoError(t, err)
	require.NotEqual(t, before.SnapshotHash, after.SnapshotHash)
	require.NotEqual(t, before.PayloadHash, after.PayloadHash)
	require.Equal(t, before.ProofRootHash, after.ProofRootHash)
}

func countDiff(a, b []byte) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	withDSL := func(src string) func(*Input) { return func(in *Input) { in.DSLSource = src } }
	withFacts := func(facts ...rules.Fact) func(*Input) { return func(in *Input) { in.Facts = facts } }
	pcf := func(payload string) rules.Fact {
		return rules.Fact{FactType: "pcf", FactKey: "total", Payload: []byte(payload)}
	}
	cases := []struct {
		name    string
		mutate  func(*Input)
		code    errcode.Code
		field   string // errcode.Error.Field
		msg     string // substring of the message
		details map[string]any
	}{
		{name: "tenant id", mutate: func(in *Input) { in.TenantID = "6F1C2A8E-3B4D-4E5F-8A9B-0C1D2E3F4A5B" }, code: errcode.Validation, field: "tenant_id"},
		{name: "passport version id", mutate: func(in *Input) { in.PassportVersionID = "" }, code: errcode.Validation, field: "passport_version_id"},
		{name: "passport id", mutate: func(in *Input) { in.PassportID = "x" }, code: errcode.Validation, field: "passport_id"},
		{name: "battery product id", mutate: func(in *Input) { in.BatteryProductID = "x" }, code: errcode.Validation, field: "battery_product_id"},
		{name: "snapshot id", mutate: func(in *Input) { in.SnapshotID = "x" }, code: errcode.Validation, field: "snapshot_id"},
		{name: "rule package version id", mutate: func(in *Input) { in.RulePackageVersionID = "x" }, code: errcode.Validation, field: "rule_package_version_id"},
		{name: "build id empty", mutate: func(in *Input) { in.CompilerBuildID = "" }, code: errcode.Validation, field: "compiler_build_id"},
		{name: "key id empty", mutate: func(in *Input) { in.SigningKeyID = "" }, code: errcode.Validation, field: "signing_key_id"},
		{name: "key id not utf-8", mutate: func(in *Input) { in.SigningKeyID = "k\xff" }, code: errcode.Validation, field: "signing_key_id"},
		{name: "dsl not utf-8", mutate: func(in *Input) { in.DSLSource = "field a : Int = 1;\xff" }, code: errcode.Validation, field: "dsl_source"},
		{name: "tests not utf-8", mutate: func(in *Input) { in.TestsSource = "\xff" }, code: errcode.Validation, field: "tests_source"},
		{name: "tests digest upper case", mutate: func(in *Input) { in.TestsSHA256 = strings.ToUpper(hash.SHA256Hex(nil)) }, code: errcode.Validation, field: "tests_sha256"},
		{name: "issued_at zero", mutate: func(in *Input) { in.IssuedAt = time.Time{} }, code: errcode.Validation, field: "issued_at"},
		{name: "issued_at out of range", mutate: func(in *Input) { in.IssuedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, code: errcode.Validation, field: "issued_at"},
		{name: "negative payload limit", mutate: func(in *Input) { in.Limits.PayloadMaxBytes = -1 }, code: errcode.Validation, field: "limits.payload_max_bytes"},
		{name: "negative proof limit", mutate: func(in *Input) { in.Limits.ProofMaxBytes = -1 }, code: errcode.Validation, field: "limits.proof_max_bytes"},
		{name: "negative receipt limit", mutate: func(in *Input) { in.Limits.ReceiptMaxBytes = -1 }, code: errcode.Validation, field: "limits.receipt_max_bytes"},

		{name: "payload not canonical (whitespace)", mutate: withFacts(pcf(`{"value": "61.20"}`)), code: errcode.Validation, field: "facts[0].payload", msg: "not in canonical form"},
		{name: "payload not canonical (key order)", mutate: withFacts(pcf(`{"value":"61.20","a":1}`)), code: errcode.Validation, field: "facts[0].payload", msg: "not in canonical form"},
		{name: "payload with a float", mutate: withFacts(pcf(`{"value":61.2}`)), code: errcode.Validation, field: "facts[0].payload", msg: "not valid BPC-CJSON-1"},
		{name: "payload not json", mutate: withFacts(pcf(`{"value"`)), code: errcode.Validation, field: "facts[0].payload"},
		{name: "empty fact type", mutate: withFacts(rules.Fact{FactKey: "k", Payload: []byte(`1`)}), code: errcode.Validation, field: "facts[0].fact_type"},
		{name: "empty fact key", mutate: withFacts(rules.Fact{FactType: "t", Payload: []byte(`1`)}), code: errcode.Validation, field: "facts[0].fact_key"},
		{name: "duplicate fact", mutate: withFacts(pcf(`{"value":"61.20"}`), rules.Fact{FactType: "bom", FactKey: "a", Payload: []byte(`1`)}, pcf(`{"value":"1.00"}`)),
			code: errcode.Validation, field: "facts[2]", msg: "duplicates facts[0]"},

		{name: "parse error", mutate: withDSL("field a : Int = ;"), code: errcode.RuleParseError, field: "a", details: map[string]any{"line": 1, "col": 17}},
		{name: "type error", mutate: withDSL(`field a : Int = "x";`), code: errcode.RuleTypeError, field: "a"},
		{name: "unknown field", mutate: withDSL(`field a : Int = field("b");`), code: errcode.RuleTypeError, field: "a"},
		{name: "unknown unit", mutate: withDSL(`field a : Qty(lb) = qty(1, kg);`), code: errcode.UnitMismatch, field: "a"},
		{name: "unit mismatch", mutate: withDSL(`field a : Qty(kg) = qty(1, kg) + qty(1, g);`), code: errcode.UnitMismatch, field: "a", details: map[string]any{"line": 1, "col": 32}},
		{name: "cycle", mutate: withDSL("field b : Int = field(\"a\");\nfield a : Int = field(\"b\");"), code: errcode.RuleCycleDetected, field: "a", msg: "a -> b -> a", details: map[string]any{"line": 2, "col": 7}},
		{name: "division by zero", mutate: withDSL(`field a : Dec(2) = 1.00 / toDec(0, 2);`), code: errcode.DivisionByZero, field: "a", details: map[string]any{"line": 1, "col": 25}},
		{name: "failed assert keeps its code", mutate: withDSL(`field a : Int = assert(1 > 2, "PCF_LIMIT", "over"); 1;`), code: "PCF_LIMIT", field: "a"},
		{name: "requireSome keeps its code", mutate: withDSL(`field a : Dec(2) = toDec(requireSome(getFact("pcf", "missing"), "PCF_MISSING", "no pcf"), 2);`), code: "PCF_MISSING", field: "a"},
		{name: "malformed fact data", mutate: withFacts(pcf(`{"value":"6x"}`)), code: errcode.Validation, field: "carbon.total"},
		{name: "path collision", mutate: withDSL("field a.b.c : Int = 1;\nfield a.b : Int = 2;\nfield a.bc : Int = 3;"), code: errcode.RuleTypeError, field: "a.b",
			msg: "paths a.b and a.b.c collide", details: map[string]any{"field": "a.b", "conflicts_with": "a.b.c", "line": 2, "col": 7}},
		{name: "path collision, short first", mutate: withDSL("field x : Int = 1;\nfield x.y : Int = 2;"), code: errcode.RuleTypeError, field: "x.y",
			msg: "paths x and x.y collide", details: map[string]any{"conflicts_with": "x"}},

		{name: "payload too large", mutate: func(in *Input) { in.Limits.PayloadMaxBytes = 100 }, code: errcode.PayloadTooLarge, details: map[string]any{"limit": 100}},
		{name: "proof too large", mutate: func(in *Input) { in.Limits.ProofMaxBytes = 100 }, code: errcode.ProofTooLarge, details: map[string]any{"limit": 100}},
		{name: "receipt too large", mutate: func(in *Input) { in.Limits.ReceiptMaxBytes = 100 }, code: errcode.ReceiptTooLarge, details: map[string]any{"limit": 100}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := baseInput()
			tc.mutate(&in)
			out, err := CompilePassport(in)
			require.Error(t, err)
			require.Zero(t, out.Payload)
			e := errcode.As(err)
			require.NotNil(t, e, "error %v is not typed", err)
			require.Equal(t, tc.code, e.Code, e.Error())
			require.Equal(t, tc.field, e.Field, e.Error())
			require.True(t, strings.HasPrefix(err.Error(), string(tc.code)+": "), "the error text starts with its code: %s", err)
			if tc.msg != "" {
				require.Contains(t, e.Message, tc.msg)
			}
			for k, v := range tc.details {
				require.Equal(t, v, e.Details[k], "details[%s] of %s", k, e.Error())
			}
		})
	}
}

// Each size limit is inclusive: an artifact of exactly the limit passes, one
// byte less fails with its size and the limit in the details.
func TestSizeLimitsAreInclusive(t *testing.T) {
	t.Parallel()
	out, err := CompilePassport(baseInput())
	require.NoError(t, err)
	sizes := []struct {
		code errcode.Code
		set  func(*Limits, int)
		size int
	}{
		{errcode.PayloadTooLarge, func(l *Limits, n int) { l.PayloadMaxBytes = n }, len(out.Payload)},
		{errcode.ProofTooLarge, func(l *Limits, n int) { l.ProofMaxBytes = n }, len(out.Proof)},
		{errcode.ReceiptTooLarge, func(l *Limits, n int) { l.ReceiptMaxBytes = n }, len(out.Receipt)},
	}
	for _, s := range sizes {
		in := baseInput()
		s.set(&in.Limits, s.size)
		same, err := CompilePassport(in)
		require.NoError(t, err, s.code)
		require.Equal(t, out, same)

		s.set(&in.Limits, s.size-1)
		_, err = CompilePassport(in)
		e := errcode.As(err)
		require.NotNil(t, e)
		require.Equal(t, s.code, e.Code)
		require.Equal(t, map[string]any{"size": s.size, "limit": s.size - 1}, e.Details)
		require.False(t, e.Retryable())
	}
}

// encoding/json decodes keys case-insensitively, so spelling a node's first
// key "Children" keeps the bytes canonical and the hashes valid; VerifyProof
// rejects it because the bytes no longer re-encode to themselves.
func TestVerifyProofRejectsKeyCaseChange(t *testing.T) {
	t.Parallel()
	out, err := CompilePassport(baseInput())
	require.NoError(t, err)
	for _, from := range []string{`{"children":`, `{"field_index":`} {
		tampered := bytes.Replace(out.Proof, []byte(from), []byte(strings.ToUpper(from[:3])+from[3:]), 1)
		require.NotEqual(t, out.Proof, tampered)
		err = VerifyProof(tampered)
		require.Equal(t, errcode.Validation, errcode.CodeOf(err), "VerifyProof must reject %s", from)
	}
	require.Equal(t, errcode.Validation, errcode.CodeOf(VerifyProof([]byte(`{}`))))
}

// Every single-byte change anywhere in a compiled proof is rejected.
func TestVerifyProofRejectsEveryByteFlip(t *testing.T) {
	t.Parallel()
	out, err := CompilePassport(loadFixture(t, "minimal"))
	require.NoError(t, err)
	require.NoError(t, VerifyProof(out.Proof))
	tampered := make([]byte, len(out.Proof))
	for i := range out.Proof {
		for _, mask := range []byte{0x01, 0x20} {
			copy(tampered, out.Proof)
			tampered[i] ^= mask
			require.Error(t, VerifyProof(tampered), "flip 0x%02x at byte %d (%q)", mask, i, out.Proof[max(0, i-20):min(len(out.Proof), i+20)])
		}
	}
}
