package compiler

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/hash"
	"github.com/bpc-platform/bpc/core/proof"
	"github.com/bpc-platform/bpc/core/receipt"
	"github.com/bpc-platform/bpc/core/rules"
	"github.com/bpc-platform/bpc/core/snapshot"
	"github.com/bpc-platform/bpc/examples/nmc811"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fixtures are the directories under testdata/, each a complete compile input
// with its expected artifacts.
// nmc811 takes its rule package and facts from examples/nmc811 (the sample
// the pipeline and demo use) instead of copies in testdata/.
var fixtures = []string{"minimal", "optional_units", "pcf_asserts", "nmc811"}

// sampleFixtures name the fixtures whose sources live in a package.
var sampleFixtures = map[string]func() (dsl, tests string, facts []rules.Fact, err error){
	"nmc811": func() (string, string, []rules.Fact, error) {
		facts, err := nmc811.Facts()
		return nmc811.Rules(), nmc811.Tests(), facts, err
	},
}

// fixtureInput is the shape of a fixture's input.json.
type fixtureInput struct {
	TenantID             string `json:"tenant_id"`
	PassportVersionID    string `json:"passport_version_id"`
	PassportID           string `json:"passport_id"`
	BatteryProductID     string `json:"battery_product_id"`
	SnapshotID           string `json:"snapshot_id"`
	RulePackageVersionID string `json:"rule_package_version_id"`
	CompilerBuildID      string `json:"compiler_build_id"`
	SigningKeyID         string `json:"signing_key_id"`
	IssuedAt             string `json:"issued_at"`
}

// fixtureFact is one element of a fixture's facts.json; the payload is
// written readably and canonicalized on load, as PARSE_FACTS would.
type fixtureFact struct {
	FactType string          `json:"fact_type"`
	FactKey  string          `json:"fact_key"`
	Payload  json.RawMessage `json:"payload"`
}

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return b
}

// loadFixture reads testdata/<name>/ into an Input.
func loadFixture(t testing.TB, name string) Input {
	t.Helper()
	dir := filepath.Join("testdata", name)
	var fi fixtureInput
	dec := json.NewDecoder(bytes.NewReader(readFile(t, filepath.Join(dir, "input.json"))))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&fi))
	issued, err := time.Parse(time.RFC3339, fi.IssuedAt)
	require.NoError(t, err)

	in := Input{
		TenantID:             fi.TenantID,
		PassportVersionID:    fi.PassportVersionID,
		PassportID:           fi.PassportID,
		BatteryProductID:     fi.BatteryProductID,
		SnapshotID:           fi.SnapshotID,
		RulePackageVersionID: fi.RulePackageVersionID,
		CompilerBuildID:      fi.CompilerBuildID,
		SigningKeyID:         fi.SigningKeyID,
		IssuedAt:             issued,
	}
	if sample, ok := sampleFixtures[name]; ok {
		in.DSLSource, in.TestsSource, in.Facts, err = sample()
		require.NoError(t, err)
		return in
	}

	var ff []fixtureFact
	require.NoError(t, json.Unmarshal(readFile(t, filepath.Join(dir, "facts.json")), &ff))
	facts := make([]rules.Fact, len(ff))
	for i, f := range ff {
		payload, err := canonjson.Canonicalize(f.Payload)
		require.NoError(t, err, "facts[%d]", i)
		facts[i] = rules.Fact{FactType: f.FactType, FactKey: f.FactKey, Payload: payload}
	}
	tests, err := os.ReadFile(filepath.Join(dir, "tests.bpc"))
	if !os.IsNotExist(err) {
		require.NoError(t, err)
	}
	in.Facts = facts
	in.DSLSource = string(readFile(t, filepath.Join(dir, "rules.bpc")))
	in.TestsSource = string(tests)
	return in
}

// hashesText is the content of hashes.txt: one "name hex" line per hash.
func hashesText(out Output) string {
	return fmt.Sprintf("snapshot_hash %s\npayload_hash %s\nproof_root_hash %s\nreceipt_hash %s\n",
		out.SnapshotHash, out.PayloadHash, out.ProofRootHash, out.ReceiptHash)
}

func parseHashes(t *testing.T, text []byte) map[string]string {
	t.Helper()
	m := map[string]string{}
	for line := range strings.Lines(string(text)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		require.True(t, ok, "hashes.txt line %q", line)
		require.True(t, hash.IsDigestHex(value), "hashes.txt %s", name)
		m[name] = value
	}
	require.Len(t, m, 4)
	return m
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("testdata", name)
			in := loadFixture(t, name)
			out, err := CompilePassport(in)
			require.NoError(t, err)

			files := map[string][]byte{
				"payload.json": out.Payload,
				"proof.json":   out.Proof,
				"receipt.json": out.Receipt,
				"hashes.txt":   []byte(hashesText(out)),
			}
			if *update {
				for file, b := range files {
					require.NoError(t, os.WriteFile(filepath.Join(dir, file), b, 0o644))
				}
			}
			for file, b := range files {
				require.Equal(t, string(readFile(t, filepath.Join(dir, file))), string(b), "%s differs from the golden file (go test -update rewrites it)", file)
			}

			// Deterministic: a second compile, and one with the facts in
			// reverse order, give the same bytes.
			again, err := CompilePassport(in)
			require.NoError(t, err)
			require.Equal(t, out, again)
			reversed := in
			reversed.Facts = slices.Clone(in.Facts)
			slices.Reverse(reversed.Facts)
			again, err = CompilePassport(reversed)
			require.NoError(t, err)
			require.Equal(t, out, again)

			verifyGoldenIndependently(t, dir, in)
		})
	}
}

// verifyGoldenIndependently checks the golden files against their recorded
// hashes and against each other without running the compiler.
func verifyGoldenIndependently(t *testing.T, dir string, in Input) {
	t.Helper()
	payload := readFile(t, filepath.Join(dir, "payload.json"))
	proofBytes := readFile(t, filepath.Join(dir, "proof.json"))
	receiptBytes := readFile(t, filepath.Join(dir, "receipt.json"))
	hashes := parseHashes(t, readFile(t, filepath.Join(dir, "hashes.txt")))

	for _, b := range [][]byte{payload, proofBytes, receiptBytes} {
		require.True(t, canonjson.Valid(b), "golden files are canonical JSON without a trailing newline")
	}
	require.Equal(t, hashes["payload_hash"], hash.SHA256Hex(payload))
	require.Equal(t, hashes["receipt_hash"], hash.SHA256Hex(receiptBytes))

	p, err := proof.Verify(proofBytes)
	require.NoError(t, err)
	require.NoError(t, VerifyProof(proofBytes))
	require.Equal(t, hashes["proof_root_hash"], p.RootHash)

	items := make([]snapshot.Item, len(in.Facts))
	factHashes := map[string]bool{}
	for i, f := range in.Facts {
		items[i] = snapshot.Item{FactType: f.FactType, FactKey: f.FactKey, PayloadHash: hash.SHA256Hex(f.Payload)}
		factHashes[f.FactType+"\x00"+f.FactKey+"\x00"+items[i].PayloadHash] = true
	}
	_, snapshotHash, err := snapshot.Seal(in.SnapshotID, items)
	require.NoError(t, err)
	require.Equal(t, hashes["snapshot_hash"], snapshotHash)

	// The receipt binds everything.
	r, err := receipt.Parse(receiptBytes)
	require.NoError(t, err)
	require.Equal(t, receipt.Receipt{
		ReceiptVersion:       "BPC-RECEIPT-1",
		IssuedAt:             in.IssuedAt.UTC().Format(time.RFC3339),
		TenantID:             in.TenantID,
		PassportVersionID:    in.PassportVersionID,
		PassportID:           in.PassportID,
		BatteryProductID:     in.BatteryProductID,
		SnapshotID:           in.SnapshotID,
		SnapshotHash:         snapshotHash,
		RulePackageVersionID: in.RulePackageVersionID,
		DSLSHA256:            hash.SHA256Hex([]byte(in.DSLSource)),
		TestsSHA256:          hash.SHA256Hex([]byte(in.TestsSource)),
		CompilerBuildID:      in.CompilerBuildID,
		PayloadHash:          hashes["payload_hash"],
		ProofRootHash:        hashes["proof_root_hash"],
		SignatureAlg:         "ED25519",
		SigningKeyID:         in.SigningKeyID,
	}, r)

	// The payload names its snapshot and ids, and holds every proved field.
	var doc struct {
		PassportFormat string         `json:"passport_format"`
		SnapshotHash   string         `json:"snapshot_hash"`
		SnapshotID     string         `json:"snapshot_id"`
		PassportID     string         `json:"passport_id"`
		Fields         map[string]any `json:"fields"`
	}
	require.NoError(t, json.Unmarshal(payload, &doc))
	require.Equal(t, "BPC-PASSPORT-1", doc.PassportFormat)
	require.Equal(t, snapshotHash, doc.SnapshotHash)
	require.Equal(t, in.SnapshotID, doc.SnapshotID)
	require.Equal(t, in.PassportID, doc.PassportID)
	for path := range p.FieldIndex {
		obj := doc.Fields
		segs := strings.Split(path, ".")
		for _, s := range segs[:len(segs)-1] {
			next, ok := obj[s].(map[string]any)
			require.True(t, ok, "payload fields lack object %s of %s", s, path)
			obj = next
		}
		require.Contains(t, obj, segs[len(segs)-1], "payload lacks field %s", path)
	}

	// Every fact the proof read is a fact of the sealed snapshot, with the
	// same payload hash.
	read := 0
	for _, n := range p.Nodes {
		if n.Type != proof.FactGet {
			continue
		}
		var d struct {
			FactType    string `json:"fact_type"`
			FactKey     string `json:"fact_key"`
			Found       *bool  `json:"found"`
			PayloadHash string `json:"payload_hash"`
			Facts       []struct {
				FactKey     string `json:"fact_key"`
				PayloadHash string `json:"payload_hash"`
			} `json:"facts"`
		}
		require.NoError(t, json.Unmarshal(n.Data, &d))
		if d.Found != nil && *d.Found {
			require.True(t, factHashes[d.FactType+"\x00"+d.FactKey+"\x00"+d.PayloadHash], "FACT_GET %s", n.ID)
			read++
		}
		for _, f := range d.Facts {
			require.True(t, factHashes[d.FactType+"\x00"+f.FactKey+"\x00"+f.PayloadHash], "FACT_GET %s", n.ID)
			read++
		}
	}
	require.Positive(t, read)

	// The fixture's rule tests pass, so the fixture is a sound rule package.
	if in.TestsSource != "" {
		prog, err := rules.Check(in.DSLSource)
		require.NoError(t, err)
		report, err := rules.RunTests(t.Context(), prog, in.TestsSource, 1)
		require.NoError(t, err)
		require.Zero(t, report.Failed, "first failure: %+v", report.FirstFailure)
	}
}
