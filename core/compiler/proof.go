package compiler

import (
	"github.com/bpc-platform/bpc/core/proof"
	"github.com/bpc-platform/bpc/core/rules"
)

// buildProof converts every field's derivation trace into a proof.Field, in
// evaluation order, and builds the BPC-PROOF-1 document.
func buildProof(res *rules.Result) (rootHash string, canonical []byte, err error) {
	fields := make([]proof.Field, len(res.Fields))
	for i, f := range res.Fields {
		fields[i] = proof.Field{Path: f.Path, Root: toStep(f.Trace)}
	}
	return proof.BuildCanonical(fields)
}

// toStep maps a trace node to a proof step one to one: the same type name,
// the same data (FACT_GET nodes already carry the payload_hash of every fact
// they read, which ties the proof to the snapshot) and the same children in
// the same order.
func toStep(n *rules.Node) *proof.Step {
	if n == nil {
		return nil
	}
	s := &proof.Step{Type: proof.NodeType(n.Type), Data: n.Data, Children: make([]*proof.Step, len(n.Children))}
	for i, c := range n.Children {
		s.Children[i] = toStep(c)
	}
	return s
}

// VerifyProof checks a stored BPC-PROOF-1 document: everything proof.Verify
// checks (canonical bytes, version, every node hash recomputed, children
// before parents, root and field_index), and in addition that the bytes are
// exactly the canonical encoding of what they decode to. The latter rejects
// a key whose case was changed where the change keeps the key order (e.g.
// "children" → "Children" as a node's first key), which encoding/json would
// otherwise decode as if nothing had changed.
func VerifyProof(proofBytes []byte) error {
	_, err := proof.Verify(proofBytes)
	return err
}
