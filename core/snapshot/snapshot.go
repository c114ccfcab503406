// Package snapshot seals a set of facts into a BPC-SNAPSHOT-1 document.
//
// BPC-SNAPSHOT-1 is the canonical JSON (BPC-CJSON-1) of
//
//	{"facts":[{"fact_key":…,"fact_type":…,"payload_hash":…},…],
//	 "snapshot_id":…,"snapshot_version":"BPC-SNAPSHOT-1"}
//
// with the facts sorted bytewise by (fact_type, fact_key, payload_hash), so the
// order in which facts were added never matters. snapshot_hash is the
// lowercase hex SHA-256 of those canonical bytes. An empty snapshot is valid
// and has "facts":[].
//
// The package is pure: no I/O, no clock, no randomness.
package snapshot

import (
	"cmp"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/bpc-platform/bpc/core/canonjson"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/hash"
)

// Version is the snapshot_version written into every sealed snapshot.
const Version = "BPC-SNAPSHOT-1"

// Item is one fact of a snapshot: its type, its key and the SHA-256 hex of its
// canonical payload.
type Item struct {
	FactType    string
	FactKey     string
	PayloadHash string
}

// document is the sealed JSON shape; canonjson sorts its keys.
type document struct {
	SnapshotVersion string `json:"snapshot_version"`
	SnapshotID      string `json:"snapshot_id"`
	Facts           []fact `json:"facts"`
}

type fact struct {
	FactType    string `json:"fact_type"`
	FactKey     string `json:"fact_key"`
	PayloadHash string `json:"payload_hash"`
}

// indexed remembers an item's position in the caller's slice for error messages.
type indexed struct {
	Item
	pos int
}

// Seal returns the BPC-SNAPSHOT-1 canonical bytes of the snapshot and their
// SHA-256 hex (snapshot_hash). The order of items does not matter and the
// caller's slice is not modified.
//
// snapshot_id must be a lowercase UUID; every item needs a non-empty, valid
// UTF-8 fact_type and fact_key and a 64-character lowercase hex payload_hash;
// an item repeated exactly is rejected. Violations are VALIDATION_ERRORs
// naming the field, e.g. "facts[2].payload_hash" (index into items).
func Seal(snapshotID string, items []Item) (canonical []byte, snapshotHash string, err error) {
	if !hash.IsUUID(snapshotID) {
		return nil, "", errcode.Invalid("snapshot_id", "must be a lowercase UUID, got %q", snapshotID)
	}
	sorted := make([]indexed, len(items))
	for i, it := range items {
		if err := validateItem(i, it); err != nil {
			return nil, "", err
		}
		sorted[i] = indexed{Item: it, pos: i}
	}
	// Go string comparison is bytewise, which is what the format requires.
	slices.SortStableFunc(sorted, func(a, b indexed) int {
		return cmp.Or(
			cmp.Compare(a.FactType, b.FactType),
			cmp.Compare(a.FactKey, b.FactKey),
			cmp.Compare(a.PayloadHash, b.PayloadHash),
		)
	})
	doc := document{SnapshotVersion: Version, SnapshotID: snapshotID, Facts: make([]fact, len(sorted))}
	for i, it := range sorted {
		if i > 0 && it.Item == sorted[i-1].Item {
			first, dup := sorted[i-1].pos, it.pos
			return nil, "", errcode.Invalid(fmt.Sprintf("facts[%d]", dup),
				"duplicates facts[%d] (fact_type %q, fact_key %q, same payload_hash)", first, it.FactType, it.FactKey)
		}
		doc.Facts[i] = fact(it.Item)
	}
	canonical, err = canonjson.Marshal(doc)
	if err != nil {
		return nil, "", errcode.Wrap(errcode.Internal, err, "error encoding snapshot %s: %s", snapshotID, err)
	}
	return canonical, hash.SHA256Hex(canonical), nil
}

func validateItem(i int, it Item) error {
	field := func(name string) string { return fmt.Sprintf("facts[%d].%s", i, name) }
	switch {
	case it.FactType == "":
		return errcode.Invalid(field("fact_type"), "must not be empty")
	case !utf8.ValidString(it.FactType):
		// encoding/json would silently replace invalid bytes, so two different
		// types could seal to the same hash.
		return errcode.Invalid(field("fact_type"), "must be valid UTF-8")
	case it.FactKey == "":
		return errcode.Invalid(field("fact_key"), "must not be empty")
	case !utf8.ValidString(it.FactKey):
		return errcode.Invalid(field("fact_key"), "must be valid UTF-8")
	case !hash.IsDigestHex(it.PayloadHash):
		return errcode.Invalid(field("payload_hash"), "must be 64 lowercase hex characters, got %q", it.PayloadHash)
	}
	return nil
}
