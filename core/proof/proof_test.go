package proof

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
)

// sample is a small derivation: total = sum of two facts, plus an assert and
// a compliance result referencing it.
func sample() []Field {
	factA := &Step{Type: FactGet, Data: map[string]any{"fact_type": "PCF", "fact_key": "stage-1", "payload_hash": strings.Repeat("a", 64)}}
	factB := &Step{Type: FactGet, Data: map[string]any{"fact_type": "PCF", "fact_key": "stage-2", "payload_hash": strings.Repeat("b", 64)}}
	total := &Step{Type: Op, Data: map[string]any{"op": "+", "value": "61.30"}, Children: []*Step{factA, factB}}
	ref := &Step{Type: FieldRef, Data: map[string]any{"field": "carbon.total"}}
	limit := &Step{Type: Const, Data: "100.00"}
	check := &Step{Type: Assert, Data: map[string]any{"code": "PCF_OVER_LIMIT", "ok": true},
		Children: []*Step{{Type: Op, Data: map[string]any{"op": "<=", "value": true}, Children: []*Step{ref, limit}}}}
	emit := &Step{Type: ComplianceEmit, Data: map[string]any{"code": "EU_2023_1542_ART7", "ok": true}, Children: []*Step{check}}
	return []Field{{Path: "carbon.total", Root: total}, {Path: "compliance.pcf", Root: emit}}
}

func TestBuildVerifyRoundTrip(t *testing.T) {
	t.Parallel()
	p, canonical, err := Build(sample())
	require.NoError(t, err)
	require.Equal(t, Version, p.ProofVersion)
	require.Len(t, p.Nodes, 9) // 3 + 5 + root
	require.Equal(t, map[string]string{"carbon.total": "n3", "compliance.pcf": "n8"}, p.FieldIndex)
	root := p.Nodes[len(p.Nodes)-1]
	require.Equal(t, p.RootHash, root.Hash)
	require.Equal(t, []string{"n3", "n8"}, root.Children)
	require.JSONEq(t, `{"op":"PASSPORT","fields":["carbon.total","compliance.pcf"]}`, string(root.Data))

	verified, err := Verify(canonical)
	require.NoError(t, err)
	require.Equal(t, p, verified)

	_, again, err := Build(sample())
	require.NoError(t, err)
	require.Equal(t, canonical, again, "same derivation, same bytes")
}

// The expected values were computed independently in Python (json.dumps
// with sorted keys and compact separators, hashlib.sha256): the leaf hashes
// {"children_hashes":[],"data":"NMC811","id":"n1","type":"CONST"}.
const (
	wantLeafHash  = "9bbb4a4f1ed5ff6d206ea357050525ff41f0cf0629fdf49a7fbd9d36570658ae"
	wantRootHash  = "dd0c0089c409df012ba8e1ae3a56bbc998c08ad016bbf27d7ad92889dbf6a0e9"
	wantCanonical = `{"field_index":{"general.chemistry":"n1"},"nodes":[{"children":[],"data":"NMC811","hash":"9bbb4a4f1ed5ff6d206ea357050525ff41f0cf0629fdf49a7fbd9d36570658ae","id":"n1","type":"CONST"},{"children":["n1"],"data":{"fields":["general.chemistry"],"op":"PASSPORT"},"hash":"dd0c0089c409df012ba8e1ae3a56bbc998c08ad016bbf27d7ad92889dbf6a0e9","id":"n2","type":"OP"}],"proof_version":"BPC-PROOF-1","root_hash":"dd0c0089c409df012ba8e1ae3a56bbc998c08ad016bbf27d7ad92889dbf6a0e9"}`
)

// The node hash recipe and document layout for a one-field proof.
func TestNodeHashGolden(t *testing.T) {
	t.Parallel()
	p, canonical, err := Build([]Field{{Path: "general.chemistry", Root: &Step{Type: Const, Data: "NMC811"}}})
	require.NoError(t, err)
	require.Equal(t, wantLeafHash, p.Nodes[0].Hash)
	require.Equal(t, wantRootHash, p.RootHash)
	require.Equal(t, wantCanonical, string(canonical))
}

// Any single-byte change of a proof is caught.
func TestVerifyRejectsEverySingleByteTampering(t *testing.T) {
	t.Parallel()
	_, canonical, err := Build(sample())
	require.NoError(t, err)
	for i := range canonical {
		for _, replacement := range []byte{'0', 'a', 'n', '"', '}'} {
			if canonical[i] == replacement {
				continue
			}
			tampered := append([]byte(nil), canonical...)
			tampered[i] = replacement
			_, err := Verify(tampered)
			require.Error(t, err, "byte %d (%q→%q) went unnoticed", i, canonical[i], replacement)
			require.Equal(t, errcode.Validation, errcode.CodeOf(err))
		}
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	t.Parallel()
	leaf := &Step{Type: Const, Data: 1}
	for name, fields := range map[string][]Field{
		"empty path":   {{Path: "", Root: leaf}},
		"no root":      {{Path: "a"}},
		"duplicate":    {{Path: "a", Root: leaf}, {Path: "a", Root: leaf}},
		"unknown type": {{Path: "a", Root: &Step{Type: "MAGIC"}}},
		"float data":   {{Path: "a", Root: &Step{Type: Const, Data: 1.5}}},
		"nil child":    {{Path: "a", Root: &Step{Type: Op, Children: []*Step{nil}}}},
	} {
		_, _, err := Build(fields)
		require.Error(t, err, name)
		require.Equal(t, errcode.Validation, errcode.CodeOf(err), name)
	}
}

func TestVerifyRejectsMalformedProofs(t *testing.T) {
	t.Parallel()
	for name, doc := range map[string]string{
		"not canonical": `{ "proof_version":"BPC-PROOF-1"}`,
		"wrong version": `{"field_index":{},"nodes":[],"proof_version":"BPC-PROOF-2","root_hash":""}`,
		"no nodes":      `{"field_index":{},"nodes":[],"proof_version":"BPC-PROOF-1","root_hash":""}`,
		"unknown field": `{"extra":1,"field_index":{},"nodes":[],"proof_version":"BPC-PROOF-1","root_hash":""}`,
		"forward child": `{"field_index":{},"nodes":[{"children":["n2"],"data":null,"hash":"","id":"n1","type":"OP"}],"proof_version":"BPC-PROOF-1","root_hash":""}`,
		"bad node type": `{"field_index":{},"nodes":[{"children":[],"data":null,"hash":"","id":"n1","type":"ROOT"}],"proof_version":"BPC-PROOF-1","root_hash":""}`,
		"bad node id":   `{"field_index":{},"nodes":[{"children":[],"data":null,"hash":"","id":"x1","type":"OP"}],"proof_version":"BPC-PROOF-1","root_hash":""}`,
		"not an object": `[]`,
	} {
		_, err := Verify([]byte(doc))
		require.Error(t, err, name)
		require.Equal(t, errcode.Validation, errcode.CodeOf(err), name)
	}
}

// randomStep builds a random derivation from a seeded generator.
func randomStep(r *rand.Rand, depth int) *Step {
	types := []NodeType{Const, FactGet, FieldRef, Op, Assert, ComplianceEmit}
	s := &Step{Type: types[r.IntN(len(types))], Data: map[string]any{"v": r.IntN(1000), "s": strconv.Itoa(r.IntN(50))}}
	if depth < 4 {
		for range r.IntN(3) {
			s.Children = append(s.Children, randomStep(r, depth+1))
		}
	}
	return s
}

func TestRandomDerivationsVerifyAndDetectTampering(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(42, 1542))
	for i := range 200 {
		var fields []Field
		for j := range 1 + r.IntN(5) {
			fields = append(fields, Field{Path: "f" + strconv.Itoa(j), Root: randomStep(r, 0)})
		}
		_, canonical, err := Build(fields)
		require.NoError(t, err)
		_, err = Verify(canonical)
		require.NoError(t, err, "case %d", i)

		pos := r.IntN(len(canonical))
		tampered := append([]byte(nil), canonical...)
		tampered[pos] ^= byte(1 + r.IntN(127))
		_, err = Verify(tampered)
		require.Error(t, err, "case %d: byte %d tampered unnoticed", i, pos)
	}
}

func FuzzVerify(f *testing.F) {
	_, canonical, err := Build(sample())
	require.NoError(f, err)
	f.Add(canonical)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"field_index":{},"nodes":[{"children":["n1"],"data":null,"hash":"","id":"n1","type":"OP"}],"proof_version":"BPC-PROOF-1","root_hash":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Verify(data)
		if err == nil {
			// Whatever verifies rebuilds to the same root.
			require.Equal(t, p.Nodes[len(p.Nodes)-1].Hash, p.RootHash)
		}
	})
}

// Keys differing only in case decode alike in encoding/json; Verify must not
// accept them.
func TestVerifyRejectsKeyCaseChanges(t *testing.T) {
	t.Parallel()
	_, canonical, err := Build(sample())
	require.NoError(t, err)
	for _, pair := range [][2]string{{`"children"`, `"Children"`}, {`"field_index"`, `"Field_index"`}} {
		tampered := strings.Replace(string(canonical), pair[0], pair[1], 1)
		require.NotEqual(t, string(canonical), tampered)
		_, err := Verify([]byte(tampered))
		require.Error(t, err, pair[1])
	}
}

// The direct writer gives the bytes of the general path (encoding/json of
// the struct, then canonicalization), also for escaped field paths.
func TestAppendCanonicalMatchesTheGeneralPath(t *testing.T) {
	t.Parallel()
	fields := append(sample(), Field{Path: "odd.\"quoted\"\tpath.é", Root: &Step{Type: Const, Data: []any{"x\n", nil, 3}}})
	p, canonical, err := Build(fields)
	require.NoError(t, err)
	raw, err := json.Marshal(struct {
		ProofVersion string            `json:"proof_version"`
		RootHash     string            `json:"root_hash"`
		Nodes        []Node            `json:"nodes"`
		FieldIndex   map[string]string `json:"field_index"`
	}(*p))
	require.NoError(t, err)
	general, err := canonjson.Canonicalize(raw)
	require.NoError(t, err)
	require.Equal(t, string(general), string(canonical))

	p.Nodes[0].Data = nil
	_, err = p.AppendCanonical(nil)
	require.Error(t, err, "a node without data is not a BPC-PROOF-1 node")
}
