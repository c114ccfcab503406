// Package proof builds and verifies BPC-PROOF-1 derivation trees: the
// evidence of how every passport field was derived from facts and rules.
//
// A proof is {proof_version, root_hash, nodes[], field_index{}}. Each node is
// {id, type, hash, data, children[]} with type one of CONST, FACT_GET,
// FIELD_REF, OP, ASSERT, COMPLIANCE_EMIT; children holds node ids, and
// hash = SHA-256 hex of the canonical JSON {id, type, data, children_hashes}.
// Nodes are listed in post-order (children before parents) and numbered in
// that order ("n1", "n2", …). The last node is the root: an OP node with data
// {"op":"PASSPORT","fields":[paths…]} whose children are the fields' root
// nodes in evaluation order; root_hash is its hash. field_index maps each
// field path to its root node and must agree with the root node, so that no
// part of a proof can change without changing root_hash or failing Verify.
package proof

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
)

// Version is the proof_version of this format.
const Version = "BPC-PROOF-1"

// NodeType is the kind of derivation step a node records.
type NodeType string

// The node types of BPC-PROOF-1.
const (
	Const          NodeType = "CONST"
	FactGet        NodeType = "FACT_GET"
	FieldRef       NodeType = "FIELD_REF"
	Op             NodeType = "OP"
	Assert         NodeType = "ASSERT"
	ComplianceEmit NodeType = "COMPLIANCE_EMIT"
)

var validTypes = map[NodeType]bool{Const: true, FactGet: true, FieldRef: true, Op: true, Assert: true, ComplianceEmit: true}

// rootOp is the op of the root node.
const rootOp = "PASSPORT"

// Step is a derivation step to record: its type, its data (any value
// encoding/json can marshal, without fractional numbers) and the steps it
// was derived from.
type Step struct {
	Type     NodeType
	Data     any
	Children []*Step
}

// Field is one passport field's derivation.
type Field struct {
	Path string
	Root *Step
}

// Tree is a derivation as BuildCanonicalTree walks it, so that a caller's
// own trace (the rules evaluator's nodes) is written without first being
// copied into Steps. A nil Child ends the build with an error.
type Tree interface {
	// StepType is the node type (one of the NodeType constants).
	StepType() NodeType
	// AppendStepData appends the canonical JSON of the node's data.
	AppendStepData(dst []byte) ([]byte, error)
	NumChildren() int
	Child(i int) Tree
}

// TreeField is one passport field's derivation as a Tree.
type TreeField struct {
	Path string
	Root Tree
}

// StepType implements Tree.
func (s *Step) StepType() NodeType { return s.Type }

// AppendStepData implements Tree.
func (s *Step) AppendStepData(dst []byte) ([]byte, error) { return canonjson.Append(dst, s.Data) }

// NumChildren implements Tree.
func (s *Step) NumChildren() int { return len(s.Children) }

// Child implements Tree; a nil child step is a nil Tree.
func (s *Step) Child(i int) Tree {
	if s.Children[i] == nil {
		return nil
	}
	return s.Children[i]
}

// Node is a node of a built proof.
type Node struct {
	ID       string          `json:"id"`
	Type     NodeType        `json:"type"`
	Hash     string          `json:"hash"`
	Data     json.RawMessage `json:"data"`
	Children []string        `json:"children"`
}

// Proof is a BPC-PROOF-1 document.
type Proof struct {
	ProofVersion string            `json:"proof_version"`
	RootHash     string            `json:"root_hash"`
	Nodes        []Node            `json:"nodes"`
	FieldIndex   map[string]string `json:"field_index"`
}

// Build numbers the steps of every field in post-order, hashes them, adds
// the root node and returns the proof with its canonical bytes: the bytes of
// BuildCanonical, parsed.
func Build(fields []Field) (*Proof, []byte, error) {
	_, canonical, err := BuildCanonical(fields)
	if err != nil {
		return nil, nil, err
	}
	var p Proof
	if err := json.Unmarshal(canonical, &p); err != nil {
		return nil, nil, fmt.Errorf("error reading the built proof: %w", err)
	}
	return &p, canonical, nil
}

// AppendCanonical appends the BPC-CJSON-1 encoding of p, written directly:
// keys in canonical order, node data (canonical by construction in Build,
// checked as part of the whole document in Verify) copied as is. The tests
// pin it to canonjson.Marshal of the same struct.
func (p *Proof) AppendCanonical(dst []byte) ([]byte, error) {
	paths := make([]string, 0, len(p.FieldIndex))
	for path := range p.FieldIndex {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	dst = append(dst, `{"field_index":{`...)
	var err error
	for i, path := range paths {
		if i > 0 {
			dst = append(dst, ',')
		}
		if dst, err = canonjson.AppendString(dst, path); err != nil {
			return nil, err
		}
		if dst, err = canonjson.AppendString(append(dst, ':'), p.FieldIndex[path]); err != nil {
			return nil, err
		}
	}
	dst = append(dst, `},"nodes":[`...)
	for i, n := range p.Nodes {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"children":[`...)
		for j, c := range n.Children {
			if j > 0 {
				dst = append(dst, ',')
			}
			if dst, err = canonjson.AppendString(dst, c); err != nil {
				return nil, err
			}
		}
		dst = append(dst, `],"data":`...)
		if len(n.Data) == 0 {
			return nil, errcode.New(errcode.Validation, "node %s has no data", n.ID)
		}
		dst = append(dst, n.Data...)
		for _, kv := range [3][2]string{{`,"hash":`, n.Hash}, {`,"id":`, n.ID}, {`,"type":`, string(n.Type)}} {
			if dst, err = canonjson.AppendString(append(dst, kv[0]...), kv[1]); err != nil {
				return nil, err
			}
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"proof_version":`...)
	if dst, err = canonjson.AppendString(dst, p.ProofVersion); err != nil {
		return nil, err
	}
	if dst, err = canonjson.AppendString(append(dst, `,"root_hash":`...), p.RootHash); err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

// maxDepth bounds recursion over a derivation (rules nest far less).
const maxDepth = 10_000

// nodeHash is SHA-256 hex of canonical {id, type, data, children_hashes}.
// The bytes are written directly — keys in canonical order, data already
// canonical, and ids ("n7"), types (the constants above) and hashes (hex)
// plain ASCII that needs no escaping — instead of going through canonjson for
// every node; the golden tests pin the result to the canonjson encoding. data
// must be canonical: Build encodes it with canonjson, Verify takes it from a
// document it has checked to be canonical as a whole. scratch is reused
// between calls.
func nodeHash(scratch *[]byte, id string, t NodeType, data json.RawMessage, childHashes []string) string {
	b := append((*scratch)[:0], `{"children_hashes":[`...)
	for i, h := range childHashes {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), h...), '"')
	}
	b = append(b, `],"data":`...)
	b = append(b, data...)
	b = append(append(append(b, `,"id":"`...), id...), `","type":"`...)
	b = append(append(b, t...), `"}`...)
	*scratch = b
	return hash.SHA256Hex(b)
}

// Verify checks a proof given as its stored bytes: canonical encoding, the
// version, every node hash recomputed from its id, type, data and children,
// children listed before their parents, the root (last node) matching
// root_hash and field_index agreeing with the root. It returns the parsed
// proof when everything holds.
func Verify(canonical []byte) (*Proof, error) {
	if !canonjson.Valid(canonical) {
		return nil, errcode.New(errcode.Validation, "proof is not canonical JSON (BPC-CJSON-1)")
	}
	var p Proof
	dec := json.NewDecoder(bytes.NewReader(canonical))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, errcode.Wrap(errcode.Validation, err, "proof does not decode: %s", err.Error())
	}
	// encoding/json matches keys case-insensitively, so "Children" would
	// decode like "children" with every hash intact: the decoded proof must
	// re-encode to exactly the bytes given.
	if again, err := p.AppendCanonical(make([]byte, 0, len(canonical))); err != nil || !bytes.Equal(again, canonical) {
		return nil, errcode.New(errcode.Validation, "proof has keys or values outside BPC-PROOF-1")
	}
	if p.ProofVersion != Version {
		return nil, errcode.New(errcode.Validation, "proof_version is %q, want %s", p.ProofVersion, Version)
	}
	if len(p.Nodes) == 0 {
		return nil, errcode.New(errcode.Validation, "proof has no nodes")
	}
	hashes := make(map[string]string, len(p.Nodes))
	var scratch []byte
	for i, n := range p.Nodes {
		if want := "n" + strconv.Itoa(i+1); n.ID != want {
			return nil, errcode.New(errcode.Validation, "node %d has id %q, want %q", i+1, n.ID, want)
		}
		if !validTypes[n.Type] {
			return nil, errcode.New(errcode.Validation, "node %s has unknown type %q", n.ID, n.Type)
		}
		childHashes := make([]string, len(n.Children))
		for j, c := range n.Children {
			h, ok := hashes[c]
			if !ok {
				return nil, errcode.New(errcode.Validation, "node %s lists child %q that does not precede it", n.ID, c)
			}
			childHashes[j] = h
		}
		if h := nodeHash(&scratch, n.ID, n.Type, n.Data, childHashes); h != n.Hash {
			return nil, errcode.New(errcode.Validation, "node %s: hash does not match its content", n.ID)
		}
		hashes[n.ID] = n.Hash
	}
	root := p.Nodes[len(p.Nodes)-1]
	if root.Hash != p.RootHash {
		return nil, errcode.New(errcode.Validation, "root_hash does not match the root node")
	}
	var rootData struct {
		Op     string   `json:"op"`
		Fields []string `json:"fields"`
	}
	if root.Type != Op || json.Unmarshal(root.Data, &rootData) != nil || rootData.Op != rootOp ||
		len(rootData.Fields) != len(root.Children) {
		return nil, errcode.New(errcode.Validation, "the last node is not a %s root", rootOp)
	}
	if len(p.FieldIndex) != len(rootData.Fields) {
		return nil, errcode.New(errcode.Validation, "field_index does not match the root's fields")
	}
	for i, path := range rootData.Fields {
		if p.FieldIndex[path] != root.Children[i] {
			return nil, errcode.New(errcode.Validation, "field_index[%s] does not match the root", path)
		}
	}
	return &p, nil
}
