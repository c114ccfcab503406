package canonjson

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// viaEncodingJSON is the general path: encoding/json, then Canonicalize.
func viaEncodingJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	out, err := Canonicalize(raw)
	require.NoError(t, err)
	return out
}

type upper string

func (u upper) AppendCanonical(dst []byte) ([]byte, error) {
	return AppendString(dst, strings.ToUpper(string(u)))
}

func (u upper) MarshalJSON() ([]byte, error) { return json.Marshal(strings.ToUpper(string(u))) }

func TestAppendMatchesTheGeneralPath(t *testing.T) {
	t.Parallel()
	v := map[string]any{
		"z": []any{nil, true, false, "x\"\\\n\t\u0001é😀<>&\u2028", 12, int64(-7), int32(3), uint32(4), uint64(1 << 63)},
		"é": []string{"b", "a"},
		"a": []map[string]any{{"k": json.Number("-0")}, {"k": json.RawMessage(` { "b" : 1 , "a" : [ ] } `)}},
		"n": json.Number("123456789012345678901234567890"),
		"u": upper("abc"),
		"s": struct {
			B int    `json:"b"`
			A string `json:"a"`
		}{1, "x"}, // general path inside the direct one
		"nil_slice": []any(nil),
		"nil_raw":   json.RawMessage(nil),
		"empty":     map[string]any{},
	}
	got, err := Marshal(v)
	require.NoError(t, err)
	require.Equal(t, string(viaEncodingJSON(t, v)), string(got))
	require.True(t, Valid(got))
	require.Contains(t, string(got), `"u":"ABC"`)
	require.Contains(t, string(got), `{"k":0}`)

	prefixed, err := Append([]byte("prefix:"), v)
	require.NoError(t, err)
	require.Equal(t, "prefix:"+string(got), string(prefixed))
}

func TestAppendRejects(t *testing.T) {
	t.Parallel()
	_, err := Marshal(map[string]any{"a": "\xff"})
	require.ErrorIs(t, err, ErrInvalidUTF8)
	_, err = Marshal(map[string]any{"\xff": 1})
	require.ErrorIs(t, err, ErrInvalidUTF8)
	_, err = Marshal([]string{"ok", "\xed\xa0\x80"})
	require.ErrorIs(t, err, ErrInvalidUTF8)
	_, err = Marshal(json.Number("1.5"))
	require.ErrorIs(t, err, ErrNonInteger)
	_, err = Marshal([]any{json.RawMessage(`{"a":1,"a":2}`)})
	require.ErrorIs(t, err, ErrDuplicateKey)
	_, err = Marshal(map[string]any{"f": 0.5})
	require.ErrorIs(t, err, ErrNonInteger)

	deep := any("x")
	for range MaxDepth + 1 {
		deep = []any{deep}
	}
	_, err = Marshal(deep)
	require.ErrorIs(t, err, ErrTooDeep)
}

// FuzzAppend: any JSON text Canonicalize accepts, decoded into the dynamic
// shapes, is written by the direct path to exactly Canonicalize's bytes.
func FuzzAppend(f *testing.F) {
	for _, s := range seedCorpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, err := Canonicalize(data)
		if err != nil {
			return
		}
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.UseNumber()
		var v any
		require.NoError(t, dec.Decode(&v))
		got, err := Append(nil, v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}

func BenchmarkMarshalTree(b *testing.B) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(benchDoc())))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		b.Fatal(err)
	}
	out, _ := Marshal(v)
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}
