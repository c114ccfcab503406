package snapshot_test

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/core/snapshot"
)

const snapshotID = "0b6f4a52-7c1e-4e8d-9a3b-5f2c1d0e9a87"

var (
	hashA = strings.Repeat("a", 64)
	hashB = "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
	hashC = strings.Repeat("0c", 32)
)

// shuffled is the golden fixture in an order different from the sealed one.
func shuffled() []snapshot.Item {
	return []snapshot.Item{
		{FactType: "PCF", FactKey: "pcf/total", PayloadHash: hashC},
		{FactType: "BOM", FactKey: "cell/nmc811", PayloadHash: hashB},
		{FactType: "BOM", FactKey: "cell/nmc811", PayloadHash: hashA},
	}
}

// The expected bytes are written out by hand: keys in byte order, facts sorted
// by (fact_type, fact_key, payload_hash), no whitespace.
const goldenJSON = `{"facts":[` +
	`{"fact_key":"cell/nmc811","fact_type":"BOM","payload_hash":"015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"},` +
	`{"fact_key":"cell/nmc811","fact_type":"BOM","payload_hash":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},` +
	`{"fact_key":"pcf/total","fact_type":"PCF","payload_hash":"0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c"}` +
	`],"snapshot_id":"0b6f4a52-7c1e-4e8d-9a3b-5f2c1d0e9a87","snapshot_version":"BPC-SNAPSHOT-1"}`

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestSealGolden(t *testing.T) {
	t.Parallel()
	canonical, h, err := snapshot.Seal(snapshotID, shuffled())
	require.NoError(t, err)
	require.Equal(t, goldenJSON, string(canonical))
	require.Equal(t, sha256Hex(goldenJSON), h)
	// Pinned (also computed with Python json.dumps sort_keys + hashlib) so that a
	// change of format is visible in review.
	require.Equal(t, "00af8f9bd8f31117ec08196c9d53b1d5ebabb09ae53d4a16d08adb36adfe26ca", h)
}

func TestSealIgnoresInputOrderAndKeepsCallerSlice(t *testing.T) {
	t.Parallel()
	items := shuffled()
	// Every permutation of the three items seals to the same bytes.
	perms := [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	for _, p := range perms {
		in := []snapshot.Item{items[p[0]], items[p[1]], items[p[2]]}
		before := slices.Clone(in)
		canonical, h, err := snapshot.Seal(snapshotID, in)
		require.NoError(t, err)
		require.Equal(t, goldenJSON, string(canonical), "permutation %v", p)
		require.Equal(t, sha256Hex(goldenJSON), h)
		require.Equal(t, before, in, "caller's slice must not be reordered")
	}
}

func TestSealEmpty(t *testing.T) {
	t.Parallel()
	want := `{"facts":[],"snapshot_id":"0b6f4a52-7c1e-4e8d-9a3b-5f2c1d0e9a87","snapshot_version":"BPC-SNAPSHOT-1"}`
	for name, items := range map[string][]snapshot.Item{"nil": nil, "empty": {}} {
		canonical, h, err := snapshot.Seal(snapshotID, items)
		require.NoError(t, err, name)
		require.Equal(t, want, string(canonical), name)
		require.Equal(t, sha256Hex(want), h, name)
	}
}

func TestSealSortsBytewise(t *testing.T) {
	t.Parallel()
	// Uppercase sorts before lowercase and "é" (0xC3…) after every ASCII byte.
	items := []snapshot.Item{
		{FactType: "T", FactKey: "é", PayloadHash: hashA},
		{FactType: "T", FactKey: "b", PayloadHash: hashA},
		{FactType: "T", FactKey: "B", PayloadHash: hashA},
		{FactType: "T", FactKey: "a<&>", PayloadHash: hashA},
	}
	canonical, _, err := snapshot.Seal(snapshotID, items)
	require.NoError(t, err)
	s := string(canonical)
	iB, ia, ib, ie := strings.Index(s, `"B"`), strings.Index(s, `"a<&>"`), strings.Index(s, `"b"`), strings.Index(s, `"é"`)
	require.True(t, iB < ia && ia < ib && ib < ie, "bytewise order B < a<&> < b < é in %s", s)
	require.NotContains(t, s, `\u003c`, "HTML characters are not escaped in canonical JSON")
}

func TestSealChangesWithEveryInput(t *testing.T) {
	t.Parallel()
	_, base, err := snapshot.Seal(snapshotID, shuffled())
	require.NoError(t, err)
	tests := []struct {
		name   string
		id     string
		mutate func([]snapshot.Item) []snapshot.Item
	}{
		{"snapshot id", "0b6f4a52-7c1e-4e8d-9a3b-5f2c1d0e9a88", nil},
		{"fact type", snapshotID, func(it []snapshot.Item) []snapshot.Item { it[0].FactType = "PCF2"; return it }},
		{"fact key", snapshotID, func(it []snapshot.Item) []snapshot.Item { it[0].FactKey = "pcf/Total"; return it }},
		{"payload hash", snapshotID, func(it []snapshot.Item) []snapshot.Item { it[0].PayloadHash = hashB; return it }},
		{"item dropped", snapshotID, func(it []snapshot.Item) []snapshot.Item { return it[1:] }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			items := shuffled()
			if tt.mutate != nil {
				items = tt.mutate(items)
			}
			_, h, err := snapshot.Seal(tt.id, items)
			require.NoError(t, err)
			require.NotEqual(t, base, h)
		})
	}
}

func TestSealRejects(t *testing.T) {
	t.Parallel()
	good := snapshot.Item{FactType: "BOM", FactKey: "k", PayloadHash: hashA}
	tests := []struct {
		name  string
		id    string
		items []snapshot.Item
		field string
		msg   string
	}{
		{"empty snapshot id", "", nil, "snapshot_id", "lowercase UUID"},
		{"uppercase snapshot id", strings.ToUpper(snapshotID), nil, "snapshot_id", "lowercase UUID"},
		{"snapshot id without dashes", strings.ReplaceAll(snapshotID, "-", "") + "0000", nil, "snapshot_id", "lowercase UUID"},
		{"empty fact type", snapshotID, []snapshot.Item{good, {FactKey: "k", PayloadHash: hashA}}, "facts[1].fact_type", "must not be empty"},
		{"empty fact key", snapshotID, []snapshot.Item{{FactType: "BOM", PayloadHash: hashA}}, "facts[0].fact_key", "must not be empty"},
		{"invalid utf-8 type", snapshotID, []snapshot.Item{{FactType: "B\xffM", FactKey: "k", PayloadHash: hashA}}, "facts[0].fact_type", "UTF-8"},
		{"invalid utf-8 key", snapshotID, []snapshot.Item{{FactType: "BOM", FactKey: "k\xc3", PayloadHash: hashA}}, "facts[0].fact_key", "UTF-8"},
		{"short hash", snapshotID, []snapshot.Item{{FactType: "BOM", FactKey: "k", PayloadHash: hashA[:63]}}, "facts[0].payload_hash", "64 lowercase hex"},
		{"uppercase hash", snapshotID, []snapshot.Item{{FactType: "BOM", FactKey: "k", PayloadHash: strings.ToUpper(hashB)}}, "facts[0].payload_hash", "64 lowercase hex"},
		{"non-hex hash", snapshotID, []snapshot.Item{{FactType: "BOM", FactKey: "k", PayloadHash: strings.Repeat("g", 64)}}, "facts[0].payload_hash", "64 lowercase hex"},
		{"empty hash", snapshotID, []snapshot.Item{{FactType: "BOM", FactKey: "k"}}, "facts[0].payload_hash", "64 lowercase hex"},
		{"exact duplicate", snapshotID, []snapshot.Item{good, {FactType: "PCF", FactKey: "k", PayloadHash: hashA}, good}, "facts[2]", "duplicates facts[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			canonical, h, err := snapshot.Seal(tt.id, tt.items)
			require.Error(t, err)
			require.Nil(t, canonical)
			require.Empty(t, h)
			e := errcode.As(err)
			require.NotNil(t, e)
			require.Equal(t, errcode.Validation, e.Code)
			require.Equal(t, tt.field, e.Field)
			require.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestSealAllowsSameKeyWithDifferentHashes(t *testing.T) {
	t.Parallel()
	_, _, err := snapshot.Seal(snapshotID, []snapshot.Item{
		{FactType: "BOM", FactKey: "k", PayloadHash: hashA},
		{FactType: "BOM", FactKey: "k", PayloadHash: hashB},
	})
	require.NoError(t, err)
}
