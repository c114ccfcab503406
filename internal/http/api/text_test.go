package api

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzCheckJSONText: the one-pass pre-scan never lets through what the
// walk refuses, and neither panics on any valid JSON.
func FuzzCheckJSONText(f *testing.F) {
	for _, seed := range []string{
		`{"a":"b"}`, `{"a":"\u0000"}`, `{"a":"\ud800"}`, `{"a":"\ud83d\ude00"}`, "{\"a\":\"\xff\"}",
		`{"a":[1e1001,2]}`, `{"a":-0.5E-999}`, `{"\u0000":1}`, `{"a":"\\u0000"}`, `{"a":"\"\u0000"}`,
		`[{"x":{"y":["z","\udc00"]}}]`, `"\u0000"`, `12345678901234567890`, `{"a.b":{"c d":"\u0000"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return
		}
		w := jsonWalker{dec: json.NewDecoder(bytes.NewReader(body)), body: body}
		w.dec.UseNumber()
		if err := w.walk(); err != nil {
			require.True(t, mayNeedTextWalk(body), "the pre-scan missed %q: %v", body, err)
		}
	})
}

func BenchmarkCheckJSONTextDocumentUpload(b *testing.B) {
	raw := make([]byte, 4<<20)
	_, _ = rand.Read(raw)
	body := []byte(`{"tenant_id":"3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f","mime_type":"application/json","content":"` +
		base64.StdEncoding.EncodeToString(raw) + `"}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := checkJSONText(body); err != nil {
			b.Fatal(err)
		}
	}
}
