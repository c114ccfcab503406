package compiler

import (
	"github.com/bpc-platform/bpc/core/proof"
	"github.com/bpc-platform/bpc/core/rules"
)

// buildProof writes every field's derivation trace, in evaluation order, as
// the BPC-PROOF-1 document: the trace nodes are walked as they are (see
// traceTree), one to one.
func buildProof(res *rules.Result) (rootHash string, canonical []byte, err error) {
	fields := make([]proof.TreeField, len(res.Fields))
	for i, f := range res.Fields {
		fields[i].Path = f.Path
		if f.Trace != nil {
			fields[i].Root = traceTree{f.Trace}
		}
	}
	return proof.BuildCanonicalTree(fields)
}

// traceTree presents a trace node as a proof.Tree: the same type name, the
// same data (FACT_GET nodes already carry the payload_hash of every fact
// they read, which ties the proof to the snapshot) and the same children in
// the same order. It is pointer-shaped, so it goes into an interface without
// an allocation.
type traceTree struct{ n *rules.Node }

func (t traceTree) StepType() proof.NodeType { return proof.NodeType(t.n.Type) }

func (t traceTree) AppendStepData(dst []byte) ([]byte, error) { return t.n.Data.AppendCanonical(dst) }

func (t traceTree) NumChildren() int { return len(t.n.Children) }

func (t traceTree) Child(i int) proof.Tree {
	if c := t.n.Children[i]; c != nil {
		return traceTree{c}
	}
	return nil
}

// VerifyProof checks a stored BPC-PROOF-1 document with proof.Verify:
// canonical bytes, version, every node hash recomputed, children before
// parents, root and field_index, and the bytes exactly the canonical
// encoding of what they decode to (so a key whose case was changed, which
// encoding/json would decode as if nothing had changed, is rejected).
func VerifyProof(proofBytes []byte) error {
	_, err := proof.Verify(proofBytes)
	return err
}
