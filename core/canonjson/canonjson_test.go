package canonjson

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func canon(t *testing.T, in string) string {
	t.Helper()
	out, err := Canonicalize([]byte(in))
	require.NoError(t, err, "input %q", in)
	return string(out)
}

func TestFixtureHash(t *testing.T) {
	out, err := Canonicalize([]byte(`{"b":2,"a":1}`))
	require.NoError(t, err)
	require.Equal(t, `{"a":1,"b":2}`, string(out))
	sum := sha256.Sum256(out)
	require.Equal(t, "43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777", hex.EncodeToString(sum[:]))
}

func TestCanonicalize(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"sort ascii", `{"c":3,"a":1,"b":2}`, `{"a":1,"b":2,"c":3}`},
		{"sort case-sensitive", `{"b":1,"B":2,"a":3,"A":4}`, `{"A":4,"B":2,"a":3,"b":1}`},
		{"sort prefix first", `{"ab":1,"a":2,"":3}`, `{"":3,"a":2,"ab":1}`},
		{"non-ascii after z", `{"é":1,"z":2,"a":3}`, `{"a":3,"z":2,"é":1}`},
		// UTF-16 would put U+1F600 (D83D DE00) before U+FF61; UTF-8 bytes put EF.. before F0...
		{"utf8 not utf16 order", `{"😀":1,"｡":2}`, `{"｡":2,"😀":1}`},
		{"escaped keys sort by decoded bytes", `{"\u00e9":1,"\u007a":2}`, `{"z":2,"é":1}`},
		{"nested", `{"z":{"y":[3,{"b":1,"a":2}],"x":null},"a":[[],{}]}`, `{"a":[[],{}],"z":{"x":null,"y":[3,{"a":2,"b":1}]}}`},
		{"whitespace removed", " \n\t{ \"a\" : [ 1 , 2 ,\r\n 3 ] , \"b\" : { } , \"c\" : [ ] } \n", `{"a":[1,2,3],"b":{},"c":[]}`},
		{"array order kept", `[3,1,2,"b","a"]`, `[3,1,2,"b","a"]`},
		{"literals", `[true,false,null]`, `[true,false,null]`},
		{"top-level scalar string", ` "x" `, `"x"`},
		{"top-level number", `42`, `42`},
		{"top-level true", `true`, `true`},
		{"negative zero", `-0`, `0`},
		{"negative zero nested", `{"a":[-0,0,-1]}`, `{"a":[0,0,-1]}`},
		{"negative", `-17`, `-17`},
		{"big integer", `123456789012345678901234567890123456789012345678901234567890`, `123456789012345678901234567890123456789012345678901234567890`},
		{"big negative integer", `[-98765432109876543210987654321]`, `[-98765432109876543210987654321]`},
		{"int64 overflow", `{"n":18446744073709551616}`, `{"n":18446744073709551616}`},
		{"empty object", `{}`, `{}`},
		{"empty array", `[]`, `[]`},
		{"empty string key", `{"":""}`, `{"":""}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := canon(t, tc.in)
			require.Equal(t, tc.want, got)
			require.True(t, Valid([]byte(got)))
			require.True(t, json.Valid([]byte(got)))
		})
	}
}

func TestEscaping(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"quote", `"a\"b"`, `"a\"b"`},
		{"backslash", `"a\\b"`, `"a\\b"`},
		{"solidus unescaped", `"a\/b"`, `"a/b"`},
		{"backspace", `"\b"`, `"\b"`},
		{"formfeed", `"\f"`, `"\f"`},
		{"newline", `"\n"`, `"\n"`},
		{"return", `"\r"`, `"\r"`},
		{"tab", `"\t"`, `"\t"`},
		{"short forms from u escapes", `"\u0008\u000C\u000a\u000D\u0009"`, `"\b\f\n\r\t"`},
		{"nul", `"\u0000"`, `"\u0000"`},
		{"other controls lowercase hex", `"\u0001\u001F\u001b\u000B"`, `"\u0001\u001f\u001b\u000b"`},
		{"quote and backslash via u escape", `"\u0022\u005C"`, `"\"\\"`},
		{"del raw", "\"\\u007f\"", "\"\x7f\""},
		{"html chars raw", `"\u003c\u003e\u0026<>&"`, `"<>&<>&"`},
		{"line separators raw", `"\u2028\u2029"`, "\"\u2028\u2029\""},
		{"raw line separators kept", "\"\u2028\u2029\"", "\"\u2028\u2029\""},
		{"u escape decoded", `"caf\u00e9"`, `"café"`},
		{"u escape uppercase hex decoded", `"caf\u00E9"`, `"café"`},
		{"raw non-ascii kept", `"日本語 é 😀"`, `"日本語 é 😀"`},
		{"surrogate pair decoded", `"\ud83d\ude00"`, `"😀"`},
		{"surrogate pair uppercase", `"\uD83D\uDE00!"`, `"😀!"`},
		{"bmp max", `"\uffff"`, "\"\uffff\""},
		{"replacement char escape", `"\ufffd"`, "\"\ufffd\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, canon(t, tc.in))
		})
	}

	// Every control character round-trips through the table.
	for c := range 0x20 {
		in := fmt.Sprintf(`"\u%04x"`, c)
		var want string
		switch c {
		case '\b':
			want = `"\b"`
		case '\f':
			want = `"\f"`
		case '\n':
			want = `"\n"`
		case '\r':
			want = `"\r"`
		case '\t':
			want = `"\t"`
		default:
			want = fmt.Sprintf(`"\u%04x"`, c)
		}
		require.Equal(t, want, canon(t, in), "control 0x%02x", c)
	}
}

func TestRejects(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	deepObj := strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
	cases := []struct {
		name, in string
		is       error
		msg      string
	}{
		{"fraction", `{"a":{"b":1.5}}`, ErrNonInteger, "canonjson: non-integer number 1.5 at $.a.b: decimals must travel as strings"},
		{"zero fraction", `1.0`, ErrNonInteger, "non-integer number 1.0 at $: decimals must travel as strings"},
		{"exponent", `[1e3]`, ErrNonInteger, "non-integer number 1e3 at $[0]"},
		{"upper exponent", `[1E3]`, ErrNonInteger, "non-integer number 1E3 at $[0]"},
		{"signed exponent", `{"x":[0,-1.0E2]}`, ErrNonInteger, "non-integer number -1.0E2 at $.x[1]"},
		{"plus exponent", `1e+3`, ErrNonInteger, "1e+3"},
		{"path with odd key", `{"a b":[{"c":0.5}]}`, ErrNonInteger, `at $["a b"][0].c`},
		{"path with empty key", `{"":{"1x":{"_y2":1e0}}}`, ErrNonInteger, `at $[""]["1x"]._y2`},
		{"duplicate key", `{"a":1,"a":2}`, ErrDuplicateKey, `duplicate object key "a" at $`},
		{"duplicate key nested", `{"x":{"k":1,"j":2,"k":3}}`, ErrDuplicateKey, `duplicate object key "k" at $.x`},
		{"duplicate key via escape", `{"é":1,"\u00e9":2}`, ErrDuplicateKey, `duplicate object key "é"`},
		{"invalid utf8", "\"a\xffb\"", ErrInvalidUTF8, "invalid UTF-8 byte 0xff"},
		{"invalid utf8 key", "{\"\xc3\":1}", ErrInvalidUTF8, "invalid UTF-8"},
		{"overlong utf8", "\"\xc0\xaf\"", ErrInvalidUTF8, "invalid UTF-8"},
		{"utf8 encoded surrogate", "\"\xed\xa0\x80\"", ErrInvalidUTF8, "invalid UTF-8"},
		{"truncated utf8", "\"\xe6\x97\"", ErrInvalidUTF8, "invalid UTF-8"},
		{"lone high surrogate", `"\ud83d"`, ErrInvalidUTF8, "lone high surrogate"},
		{"lone high surrogate then text", `"\ud83dx"`, ErrInvalidUTF8, "lone high surrogate"},
		{"lone low surrogate", `"\ude00"`, ErrInvalidUTF8, "lone low surrogate"},
		{"high then non-low", `"\ud83d\u0041"`, ErrInvalidUTF8, "not followed by a low surrogate"},
		{"high then high", `"\ud83d\ud83d"`, ErrInvalidUTF8, "not followed by a low surrogate"},
		{"trailing garbage", `{"a":1}x`, ErrSyntax, "trailing data"},
		{"two values", `1 2`, ErrSyntax, "trailing data"},
		{"leading zero", `01`, ErrSyntax, "trailing data"},
		{"leading zero in array", `[01]`, ErrSyntax, "unexpected character '1'"},
		{"unterminated object", `{"a":1`, ErrSyntax, "unexpected end of input"},
		{"unterminated array", `[1,2`, ErrSyntax, "unexpected end of input"},
		{"unterminated string", `"abc`, ErrSyntax, "unterminated string"},
		{"unterminated escape", `"abc\`, ErrSyntax, "unterminated string"},
		{"unterminated u escape", `"\u00`, ErrSyntax, "unterminated \\u escape"},
		{"unterminated pair", `"\ud83d\ude`, ErrSyntax, "unterminated \\u escape"},
		{"bad hex", `"\u00g0"`, ErrSyntax, "invalid hex digit"},
		{"bad escape", `"\x"`, ErrSyntax, "invalid escape"},
		{"raw control char", "\"a\nb\"", ErrSyntax, "unescaped control character"},
		{"empty", ``, ErrSyntax, "unexpected end of input"},
		{"whitespace only", " \n ", ErrSyntax, "unexpected end of input"},
		{"too deep arrays", deep, ErrTooDeep, "more than 1000 levels"},
		{"too deep objects", deepObj, ErrTooDeep, "more than 1000 levels"},
		{"trailing comma array", `[1,]`, ErrSyntax, "expected a value"},
		{"trailing comma object", `{"a":1,}`, ErrSyntax, "expected a string object key"},
		{"missing colon", `{"a" 1}`, ErrSyntax, "expected ':'"},
		{"missing comma", `{"a":1 "b":2}`, ErrSyntax, "expected ',' or '}'"},
		{"array missing comma", `[1 2]`, ErrSyntax, "expected ',' or ']'"},
		{"non-string key", `{1:2}`, ErrSyntax, "string object key"},
		{"single quotes", `'a'`, ErrSyntax, "expected a value"},
		{"bad literal", `tru`, ErrSyntax, "expected true"},
		{"bad literal false", `[fals]`, ErrSyntax, "expected false"},
		{"bad literal null", `nul`, ErrSyntax, "expected null"},
		{"minus alone", `-`, ErrSyntax, "expected a digit"},
		{"minus letter", `-a`, ErrSyntax, "expected a digit"},
		{"dot no digit", `1.`, ErrSyntax, "after the decimal point"},
		{"dot letter", `1.x`, ErrSyntax, "after the decimal point"},
		{"exponent no digit", `1e`, ErrSyntax, "in the exponent"},
		{"exponent sign no digit", `1e+`, ErrSyntax, "in the exponent"},
		{"leading dot", `.5`, ErrSyntax, "expected a value"},
		{"plus sign", `+1`, ErrSyntax, "expected a value"},
		{"NaN", `NaN`, ErrSyntax, "expected a value"},
		{"BOM", "\ufeff{}", ErrSyntax, "expected a value"},
		{"unclosed nested", `{"a":[`, ErrSyntax, "unexpected end of input"},
		{"object after key", `{"a"`, ErrSyntax, "expected ':'"},
		{"comma only", `{,}`, ErrSyntax, "string object key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Canonicalize([]byte(tc.in))
			require.Error(t, err)
			require.Nil(t, out)
			require.ErrorIs(t, err, tc.is)
			require.Contains(t, err.Error(), tc.msg)
			require.True(t, strings.HasPrefix(err.Error(), "canonjson: "), err.Error())
			require.False(t, Valid([]byte(tc.in)))
		})
	}
}

func TestDepthLimitBoundary(t *testing.T) {
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	require.Equal(t, ok, canon(t, ok))
	okObj := strings.Repeat(`{"a":`, MaxDepth-1) + "[]" + strings.Repeat("}", MaxDepth-1)
	require.Equal(t, okObj, canon(t, okObj))
}

func TestErrorPathInLongArray(t *testing.T) {
	_, err := Canonicalize([]byte(`{"items":[{"q":1},{"q":2},{"q":3.25}]}`))
	require.ErrorIs(t, err, ErrNonInteger)
	require.EqualError(t, err, "canonjson: non-integer number 3.25 at $.items[2].q: decimals must travel as strings")
}

func TestIdempotence(t *testing.T) {
	for _, in := range seedCorpus {
		once, err := Canonicalize([]byte(in))
		if err != nil {
			continue
		}
		twice, err := Canonicalize(once)
		require.NoError(t, err)
		require.Equal(t, string(once), string(twice), "input %q", in)
		require.True(t, Valid(once))
	}
}

func TestValid(t *testing.T) {
	require.True(t, Valid([]byte(`{"a":1,"b":2}`)))
	require.True(t, Valid([]byte(`"é"`)))
	require.False(t, Valid([]byte(`{"b":2,"a":1}`)))
	require.False(t, Valid([]byte(`{"a": 1}`)))
	require.False(t, Valid([]byte(`"\u00e9"`)))
	require.False(t, Valid([]byte(`-0`)))
	require.False(t, Valid([]byte(`1.5`)))
	require.False(t, Valid([]byte(`{"a":1}`+"\n")))
	require.False(t, Valid(nil))
}

type line struct {
	SKU      string `json:"sku"`
	Qty      int    `json:"qty"`
	Note     string `json:"note,omitempty"`
	internal int
}

type order struct {
	ID     string            `json:"id"`
	Lines  []line            `json:"lines"`
	Meta   map[string]string `json:"meta"`
	Amount json.Number       `json:"amount_minor"`
	Skip   string            `json:"-"`
	Total  int64             `json:"total"`
}

func TestMarshal(t *testing.T) {
	o := order{
		ID:     "ord-1",
		Lines:  []line{{SKU: "B<1>", Qty: 2, internal: 9}, {SKU: "a&b", Qty: 1, Note: "é"}},
		Meta:   map[string]string{"z": "1", "é": "2", "a": "3"},
		Amount: "12345678901234567890",
		Skip:   "hidden",
		Total:  -5,
	}
	out, err := Marshal(o)
	require.NoError(t, err)
	require.Equal(t,
		`{"amount_minor":12345678901234567890,"id":"ord-1","lines":[{"qty":2,"sku":"B<1>"},{"note":"é","qty":1,"sku":"a&b"}],"meta":{"a":"3","z":"1","é":"2"},"total":-5}`,
		string(out))
	require.True(t, Valid(out))

	out, err = Marshal(map[string]any{"b": 2, "a": 1})
	require.NoError(t, err)
	require.Equal(t, `{"a":1,"b":2}`, string(out))

	out, err = Marshal(3.0) // integral float64 marshals as "3"
	require.NoError(t, err)
	require.Equal(t, "3", string(out))
}

func TestMarshalErrors(t *testing.T) {
	_, err := Marshal(2.5)
	require.ErrorIs(t, err, ErrNonInteger)
	require.Contains(t, err.Error(), "non-integer number 2.5")
	require.Contains(t, err.Error(), "decimals must travel as strings")

	_, err = Marshal(struct {
		Price float64 `json:"price"`
	}{Price: 0.1})
	require.ErrorIs(t, err, ErrNonInteger)
	require.Contains(t, err.Error(), "at $.price")

	_, err = Marshal(1e21) // encoding/json uses an exponent here
	require.ErrorIs(t, err, ErrNonInteger)

	_, err = Marshal(make(chan int))
	require.Error(t, err)
	var ute *json.UnsupportedTypeError
	require.True(t, errors.As(err, &ute))
	require.Contains(t, err.Error(), "canonjson: marshal chan int")
}

// normalize rewrites json.Number("-0") to "0" so decoded trees compare equal.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if x == "-0" {
			return json.Number("0")
		}
		return x
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
		return x
	case map[string]any:
		for k := range x {
			x[k] = normalize(x[k])
		}
		return x
	default:
		return v
	}
}

func decodeNumbers(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return normalize(v)
}

var seedCorpus = []string{
	`{"b":2,"a":1}`,
	`{"a":1,"b":2}`,
	`{}`, `[]`, `""`, `0`, `-0`, `1`, `-1`, `true`, `false`, `null`,
	`  {"z" : [1, 2, {"y": null, "x": true}], "a": "s"}  `,
	`{"é":1,"z":2,"😀":3,"｡":4}`,
	`"\u0000\u001f\b\f\n\r\t\"\\\/"`,
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\u00e9"`, `"\u2028<>&"`,
	`1.5`, `1e3`, `-1.0E2`, `1.`, `01`, `-`, `--1`,
	`123456789012345678901234567890`,
	`{"a":1,"a":2}`,
	"\"\xff\"", "\"\xed\xa0\x80\"",
	`{"a":1}x`, `[1,2`, `{"a":`, `"abc`,
	`[[[[[[[[[[]]]]]]]]]]`,
	`{"k":{"k":{"k":{"k":[{"k":"v"}]}}}}`,
	"{\"\t\":\"\u007f\"}",
	`[true,false,null,"x",{"":[]}]`,
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range seedCorpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Canonicalize(data)
		if err != nil {
			require.Nil(t, out)
			// Differential check: anything encoding/json accepts may only be
			// refused for a BPC-CJSON-1 rule, never as a syntax error.
			if json.Valid(data) {
				require.False(t, errors.Is(err, ErrSyntax), "syntax error on valid JSON %q: %v", data, err)
				require.True(t, errors.Is(err, ErrNonInteger) || errors.Is(err, ErrDuplicateKey) ||
					errors.Is(err, ErrInvalidUTF8) || errors.Is(err, ErrTooDeep), "unexpected error %v", err)
			}
			return
		}
		require.True(t, json.Valid(data), "accepted input encoding/json rejects: %q", data)
		require.True(t, json.Valid(out), "output not valid JSON: %q", out)
		require.True(t, Valid(out), "output not canonical: %q", out)
		again, err := Canonicalize(out)
		require.NoError(t, err)
		require.Equal(t, out, again)
		// Canonicalization must not change meaning.
		require.True(t, reflect.DeepEqual(decodeNumbers(t, data), decodeNumbers(t, out)),
			"meaning changed: %q -> %q", data, out)
	})
}

// benchDoc builds a deterministic, realistic ~10 KB nested document with
// pretty-printing and unsorted keys.
func benchDoc() []byte {
	var sb strings.Builder
	sb.WriteString("{\n  \"schema\": \"bpc.batch.v1\",\n  \"batch_id\": \"b-000123\",\n  \"entries\": [\n")
	for i := 0; sb.Len() < 10*1024-200; i++ {
		if i > 0 {
			sb.WriteString(",\n")
		}
		fmt.Fprintf(&sb, `    {
      "seq": %d,
      "account": {"id": "acc-%04d", "name": "Compte n°%d – Société", "tags": ["retail", "eu", "tier-%d"]},
      "amount_minor": %d,
      "currency": "EUR",
      "memo": "line\twith \"quotes\" and \u00e9 %d",
      "approved": %t,
      "parent": null
    }`, i, i, i, i%3, (i+1)*12345, i, i%2 == 0)
	}
	sb.WriteString("\n  ],\n  \"created_by\": \"svc-ledger\"\n}\n")
	return []byte(sb.String())
}

func TestBenchDocIsAccepted(t *testing.T) {
	doc := benchDoc()
	require.InDelta(t, 10*1024, len(doc), 1024)
	out := canon(t, string(doc))
	require.True(t, Valid([]byte(out)))
}

func BenchmarkCanonicalize(b *testing.B) {
	doc := benchDoc()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonicalize(doc); err != nil {
			b.Fatal(err)
		}
	}
}
