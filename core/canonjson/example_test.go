package canonjson_test

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/bpc-platform/bpc/core/canonjson"
)

// Canonicalize rewrites JSON text into the one spelling that is hashed: keys
// sorted, no whitespace. The hash is the one SPEC §6 gives for this object.
func ExampleCanonicalize() {
	canonical, err := canonjson.Canonicalize([]byte(`{ "b": 2, "a": 1 }`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s\n%x\n", canonical, sha256.Sum256(canonical))
	// Output:
	// {"a":1,"b":2}
	// 43258cff783fe7036d8a43033f830adfc60ec037382473548ac742b888292777
}

// Numbers must be integers, and a key may appear once: decimals travel as
// strings, and an object has one meaning.
func ExampleCanonicalize_rejected() {
	for _, doc := range []string{`{"pcf_total":61.2}`, `{"a":1,"a":2}`, `{"a":1} {"b":2}`} {
		_, err := canonjson.Canonicalize([]byte(doc))
		fmt.Println(errors.Is(err, canonjson.ErrNonInteger), errors.Is(err, canonjson.ErrDuplicateKey), errors.Is(err, canonjson.ErrSyntax))
	}
	// Output:
	// true false false
	// false true false
	// false false true
}

// Marshal encodes Go values directly: map keys sorted by their UTF-8 bytes,
// strings escaped minimally (non-ASCII stays raw UTF-8), arrays in order.
func ExampleMarshal() {
	b, err := canonjson.Marshal(map[string]any{
		"name":      "Zoë <pack>",
		"cells":     288,
		"materials": []any{"Ni", "Co", "Mn"},
		"Capacity":  map[string]any{"value": "75.000", "unit": "kWh"},
		"note":      "line 1\nline 2",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(b))
	// Output:
	// {"Capacity":{"unit":"kWh","value":"75.000"},"cells":288,"materials":["Ni","Co","Mn"],"name":"Zoë <pack>","note":"line 1\nline 2"}
}

// Valid tells whether bytes are already canonical, as stored artifacts must be.
func ExampleValid() {
	fmt.Println(canonjson.Valid([]byte(`{"a":1,"b":2}`)))
	fmt.Println(canonjson.Valid([]byte(`{"b":2,"a":1}`)))
	fmt.Println(canonjson.Valid([]byte(`{"a": 1}`)))
	// Output:
	// true
	// false
	// false
}
