package compiler

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/rules"
	"github.com/bpc-platform/bpc/core/snapshot"
)

// The SPEC §6 default size limits, in canonical bytes.
const (
	DefaultPayloadMaxBytes = 131072
	DefaultProofMaxBytes   = 262144
	DefaultReceiptMaxBytes = receipt.MaxBytes
)

// Limits bounds the canonical size of the artifacts; a zero member means the
// SPEC default (BPC_PAYLOAD_MAX_BYTES, BPC_PROOF_MAX_BYTES, BPC_RECEIPT_MAX_BYTES).
type Limits struct {
	PayloadMaxBytes int
	ProofMaxBytes   int
	ReceiptMaxBytes int
	// Rules bounds the rule source and its tests (BPC_RULES_MAX_NODES,
	// BPC_RULES_MAX_CASES; zero members are the rules package's defaults).
	Rules rules.Limits
}

// Input is everything a compile depends on. Ids are lowercase UUIDs.
type Input struct {
	TenantID          string
	PassportVersionID string
	PassportID        string
	BatteryProductID  string
	// SnapshotID identifies the sealed snapshot whose facts are Facts.
	SnapshotID string
	// Facts are the snapshot's facts with their canonical (BPC-CJSON-1)
	// payloads; order does not matter, (FactType, FactKey) must be unique.
	Facts                []rules.Fact
	RulePackageVersionID string
	// DSLSource is the rule package's BPC-RULES-1 source; it is compiled, and
	// its SHA-256 is the receipt's dsl_sha256.
	DSLSource string
	// TestsSource is the rule package's tests source; only its SHA-256
	// (tests_sha256) enters the receipt.
	TestsSource string
	// TestsSHA256, when set, is that SHA-256 (lowercase hex) as recorded
	// with the rule package version, and TestsSource is not read: a compile
	// need not load and hash a tests source of hundreds of KB. A replay
	// leaves it empty and hashes the source.
	TestsSHA256     string
	CompilerBuildID string
	SigningKeyID    string
	// IssuedAt is the receipt's issued_at, truncated to whole seconds in UTC.
	IssuedAt time.Time
	Limits   Limits
}

// testsSHA256 is the receipt's tests_sha256.
func (in Input) testsSHA256() string {
	if in.TestsSHA256 != "" {
		return in.TestsSHA256
	}
	return hash.SHA256HexString(in.TestsSource)
}

// validate checks everything but the facts and returns the effective limits.
func (in Input) validate() (Limits, error) {
	if err := receipt.CheckUUIDs([]receipt.Field{
		{Name: "tenant_id", Value: in.TenantID},
		{Name: "passport_version_id", Value: in.PassportVersionID},
		{Name: "passport_id", Value: in.PassportID},
		{Name: "battery_product_id", Value: in.BatteryProductID},
		{Name: "snapshot_id", Value: in.SnapshotID},
		{Name: "rule_package_version_id", Value: in.RulePackageVersionID},
	}); err != nil {
		return Limits{}, err
	}
	if err := receipt.CheckTexts([]receipt.Field{
		{Name: "compiler_build_id", Value: in.CompilerBuildID},
		{Name: "signing_key_id", Value: in.SigningKeyID},
	}); err != nil {
		return Limits{}, err
	}
	// The digests are of the sources' UTF-8 bytes; other bytes would make the
	// recorded digest describe text no reader can see.
	if !utf8.ValidString(in.DSLSource) {
		return Limits{}, errcode.Invalid("dsl_source", "must be valid UTF-8")
	}
	if !utf8.ValidString(in.TestsSource) {
		return Limits{}, errcode.Invalid("tests_source", "must be valid UTF-8")
	}
	if in.TestsSHA256 != "" && !hash.IsDigestHex(in.TestsSHA256) {
		return Limits{}, errcode.Invalid("tests_sha256", "must be a SHA-256 in lowercase hex")
	}
	if in.IssuedAt.IsZero() {
		return Limits{}, errcode.Invalid("issued_at", "must be set")
	}
	return in.Limits.effective()
}

// effective replaces zero limits by the SPEC defaults; negative ones are invalid.
func (l Limits) effective() (Limits, error) {
	limits := []struct {
		field string
		value *int
		def   int
	}{
		{"limits.payload_max_bytes", &l.PayloadMaxBytes, DefaultPayloadMaxBytes},
		{"limits.proof_max_bytes", &l.ProofMaxBytes, DefaultProofMaxBytes},
		{"limits.receipt_max_bytes", &l.ReceiptMaxBytes, DefaultReceiptMaxBytes},
	}
	for _, lim := range limits {
		switch {
		case *lim.value < 0:
			return Limits{}, errcode.Invalid(lim.field, "must not be negative, got %d", *lim.value)
		case *lim.value == 0:
			*lim.value = lim.def
		}
	}
	return l, nil
}

// sealFacts checks every fact (non-empty UTF-8 type and key, canonical
// payload, unique (type, key)) and returns the BPC-SNAPSHOT-1 hash of the set.
func sealFacts(snapshotID string, facts []rules.Fact) (string, error) {
	items := make([]snapshot.Item, len(facts))
	for i, f := range facts {
		canon, err := canonjson.Canonicalize(f.Payload)
		if err != nil {
			return "", errcode.InvalidWrap(fmt.Sprintf("facts[%d].payload", i), err,
				"fact (%s, %s) is not valid BPC-CJSON-1: %s", f.FactType, f.FactKey, err.Error())
		}
		if !bytes.Equal(canon, f.Payload) {
			return "", errcode.Invalid(fmt.Sprintf("facts[%d].payload", i),
				"fact (%s, %s) is not in canonical form (BPC-CJSON-1); the snapshot must hold canonical bytes", f.FactType, f.FactKey)
		}
		items[i] = snapshot.Item{FactType: f.FactType, FactKey: f.FactKey, PayloadHash: hash.SHA256Hex(f.Payload)}
	}
	// Seal allows one (type, key) with two payloads; the rules cannot (getFact
	// would be ambiguous), so reject it here with both positions.
	order := make([]int, len(facts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(facts[a].FactType, facts[b].FactType), cmp.Compare(facts[a].FactKey, facts[b].FactKey))
	})
	for k := 1; k < len(order); k++ {
		a, b := facts[order[k-1]], facts[order[k]]
		if a.FactType == b.FactType && a.FactKey == b.FactKey {
			return "", errcode.Invalid(fmt.Sprintf("facts[%d]", order[k]),
				"duplicates facts[%d] (fact_type %q, fact_key %q)", order[k-1], b.FactType, b.FactKey)
		}
	}
	_, snapshotHash, err := snapshot.Seal(snapshotID, items)
	if err != nil {
		return "", err
	}
	return snapshotHash, nil
}
