package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// anyDocuments are JSON texts, valid and not, on which unmarshalJSON must
// answer as json.Unmarshal does.
var anyDocuments = []string{
	`{}`, `[]`, `{"a":1}`, ` {"a" : [1, -2.5e3, 0, -0, 1E+2, true, false, null, "x"] } `,
	`{"jobs":[{"type":"DELIVER_WEBHOOK","tenant_id":"00000000-0000-0000-0000-00000000de00","payload":{"webhook_delivery_id":"3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f"}}]}`,
	`{"a":1,"a":2}`, `{"a":{"b":{"c":[[[]]]}}}`, `"x"`, `12`, `null`, `true`,
	`{"esc":"a\"b\\c\n\u00e9\ud83d\ude00"}`, `{"lone":"\ud800"}`, "{\"bad\":\"\xff\"}", `{"é":"ü"}`,
	`{"big":1e400}`, `{"n":01}`, `{"n":1.}`, `{"n":.5}`, `{"n":+1}`, `{"n":-}`, `{"n":1e}`, `{"n":0x10}`,
	``, ` `, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{"a":1}x`, `{} {}`, `tru`, `nul`, `truex`,
	"{\"ctl\":\"a\tb\"}", `{"a":1}` + "\n",
}

// TestUnmarshalJSONIsJSONUnmarshal checks that the document unmarshalJSON
// builds for Huma's validation, or its error, is json.Unmarshal's, and
// that the usual bodies take its own path.
func TestUnmarshalJSONIsJSONUnmarshal(t *testing.T) {
	t.Parallel()
	for _, doc := range anyDocuments {
		requireSameAsJSONUnmarshal(t, []byte(doc))
	}
	for _, doc := range anyDocuments[:7] {
		_, ok := decodeAny([]byte(doc))
		require.True(t, ok, doc)
	}
	// Nesting deeper than decodeAny goes is left to json.Unmarshal.
	deep := make([]byte, 0, 2*(maxAnyDepth+1))
	for range maxAnyDepth + 1 {
		deep = append(deep, '[')
	}
	for range maxAnyDepth + 1 {
		deep = append(deep, ']')
	}
	requireSameAsJSONUnmarshal(t, deep)
	// Not an empty *any: json.Unmarshal's.
	var s struct{ A int }
	require.NoError(t, unmarshalJSON([]byte(`{"a":1}`), &s))
	require.Equal(t, 1, s.A)
}

func FuzzUnmarshalJSON(f *testing.F) {
	for _, doc := range anyDocuments {
		f.Add([]byte(doc))
	}
	f.Fuzz(requireSameAsJSONUnmarshal)
}

func requireSameAsJSONUnmarshal(t *testing.T, data []byte) {
	var want, got any
	wantErr := json.Unmarshal(data, &want)
	err := unmarshalJSON(data, &got)
	if wantErr != nil {
		require.EqualError(t, err, wantErr.Error(), "%q", data)
		return
	}
	require.NoError(t, err, "%q", data)
	require.Equal(t, want, got, "%q", data)
}
