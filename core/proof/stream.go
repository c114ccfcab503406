package proof

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
)

// BuildCanonical is Build without the parsed document: it writes the
// canonical bytes in one pass, straight into the output — node ids follow
// from counting each field's steps first, so field_index (which sorts before
// nodes) is written first, and every node's data is encoded once, in place,
// and hashed from there. It returns the root hash and the bytes; Build
// parses the same bytes into a Proof.
func BuildCanonical(fields []Field) (rootHash string, canonical []byte, err error) {
	trees := make([]TreeField, len(fields))
	for i, f := range fields {
		trees[i].Path = f.Path
		if f.Root != nil {
			trees[i].Root = f.Root
		}
	}
	return BuildCanonicalTree(trees)
}

// BuildCanonicalTree is BuildCanonical over Trees.
func BuildCanonicalTree(fields []TreeField) (rootHash string, canonical []byte, err error) {
	paths := make([]string, len(fields))
	rootIDs := make([]int, len(fields))
	seen := make(map[string]bool, len(fields))
	total := 0
	for i, f := range fields {
		if f.Path == "" || f.Root == nil {
			return "", nil, errcode.Invalid("fields", "field %d has no path or no derivation", i)
		}
		if seen[f.Path] {
			return "", nil, errcode.Invalid("fields", "field %s appears twice", f.Path)
		}
		seen[f.Path] = true
		n, err := checkSteps(f.Root, 0)
		if err != nil {
			return "", nil, fmt.Errorf("error building the proof of %s: %w", f.Path, err)
		}
		total += n
		paths[i], rootIDs[i] = f.Path, total
	}

	w := &streamWriter{buf: make([]byte, 0, 256*(total+1))}
	w.buf = append(w.buf, `{"field_index":{`...)
	order := make([]int, len(fields))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case paths[a] < paths[b]:
			return -1
		case paths[a] > paths[b]:
			return 1
		}
		return 0
	})
	for k, i := range order {
		if k > 0 {
			w.buf = append(w.buf, ',')
		}
		if w.buf, err = canonjson.AppendString(w.buf, paths[i]); err != nil {
			return "", nil, errcode.InvalidWrap("fields", err, "field path: %s", err.Error())
		}
		w.buf = append(w.buf, `:"n`...)
		w.buf = append(strconv.AppendInt(w.buf, int64(rootIDs[i]), 10), '"')
	}
	w.buf = append(w.buf, `},"nodes":[`...)
	for i, f := range fields {
		if _, err := w.emit(f.Root); err != nil {
			return "", nil, fmt.Errorf("error building the proof of %s: %w", paths[i], err)
		}
	}
	// The root: OP {"op":"PASSPORT","fields":[paths…]} over the fields'
	// roots, which are what the stacks hold now, in field order.
	root, err := w.node(Op, &Step{Type: Op, Data: map[string]any{"op": rootOp, "fields": paths}}, w.ids, len(fields))
	if err != nil {
		return "", nil, err
	}
	hexRoot := hex.EncodeToString(root[:])
	w.buf = append(w.buf, `],"proof_version":"`+Version+`","root_hash":"`...)
	w.buf = append(append(w.buf, hexRoot...), `"}`...)
	return hexRoot, w.buf, nil
}

// checkSteps counts a derivation's steps and rejects what Build rejects: a
// nil child or nesting deeper than maxDepth.
func checkSteps(s Tree, depth int) (int, error) {
	if depth > maxDepth {
		return 0, errcode.Invalid("fields", "derivation nested deeper than %d", maxDepth)
	}
	n := 1
	for i := range s.NumChildren() {
		c := s.Child(i)
		if c == nil {
			return 0, errcode.Invalid("fields", "nil child step")
		}
		k, err := checkSteps(c, depth+1)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// streamWriter writes nodes in post-order. hashes is a stack of the hashes
// of nodes written but not yet consumed by their parent; ids likewise.
type streamWriter struct {
	buf     []byte
	scratch []byte
	next    int
	hashes  [][32]byte
	ids     []int
}

// emit writes s's subtree and pushes s's id and hash on the stacks.
func (w *streamWriter) emit(s Tree) ([32]byte, error) {
	k := s.NumChildren()
	for i := range k {
		if _, err := w.emit(s.Child(i)); err != nil {
			return [32]byte{}, err
		}
	}
	return w.node(s.StepType(), s, w.ids, k)
}

// node writes one node whose n children are the top n entries of the
// stacks (ids is w.ids), pops them and pushes the node.
func (w *streamWriter) node(t NodeType, data Tree, ids []int, n int) ([32]byte, error) {
	childIDs := ids[len(ids)-n:]
	if !validTypes[t] {
		return [32]byte{}, errcode.Invalid("type", "unknown proof node type %q", t)
	}
	w.next++
	id := w.next
	if id > 1 {
		w.buf = append(w.buf, ',')
	}
	w.buf = append(w.buf, `{"children":[`...)
	for i, c := range childIDs {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		w.buf = append(strconv.AppendInt(append(w.buf, `"n`...), int64(c), 10), '"')
	}
	w.buf = append(w.buf, `],"data":`...)
	start := len(w.buf)
	var err error
	if w.buf, err = data.AppendStepData(w.buf); err != nil {
		return [32]byte{}, errcode.InvalidWrap("data", err, "node data is not canonical JSON: %s", err.Error())
	}
	// The node hash: SHA-256 of {"children_hashes":[…],"data":…,"id":…,"type":…}.
	childHashes := w.hashes[len(w.hashes)-n:]
	b := append(w.scratch[:0], `{"children_hashes":[`...)
	for i, h := range childHashes {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(hex.AppendEncode(append(b, '"'), h[:]), '"')
	}
	b = append(append(b, `],"data":`...), w.buf[start:]...)
	b = strconv.AppendInt(append(b, `,"id":"n`...), int64(id), 10)
	b = append(append(append(b, `","type":"`...), t...), `"}`...)
	w.scratch = b
	sum := sha256.Sum256(b)

	w.buf = append(hex.AppendEncode(append(w.buf, `,"hash":"`...), sum[:]), `","id":"n`...)
	w.buf = append(append(append(strconv.AppendInt(w.buf, int64(id), 10), `","type":"`...), t...), `"}`...)

	w.hashes = append(w.hashes[:len(w.hashes)-n], sum)
	w.ids = append(w.ids[:len(w.ids)-n], id)
	return sum, nil
}
