package jobargs

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// memberPayloads are payloads, objects and not, valid JSON and not, on
// which rawMembers must answer as json.Unmarshal does.
var memberPayloads = []string{
	`{}`, ` { } `, `{"webhook_delivery_id":"3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f"}`,
	"{ \"a\" :\t1 ,\n\"b\": [1, {\"c\": \"]}\\\"\"}], \"d\": {\"e\": [[]]}, \"f\": null, \"g\": true, \"h\": -1.5e3 }",
	`{"a":1,"a":"two"}`, `{"s":"a\"b\\","t":"\u00e9"}`, `{"é":1}`, `{"a\u0062":1}`, `{"a\"b":1}`, "{\"\xff\":1}",
	`[]`, `"x"`, `1`, `null`, `{"a":1`, `{"a":1}x`, `{"a":01}`, ``, `{"a" 1}`, `{,}`,
}

// TestRawMembersIsJSONUnmarshal checks rawMembers against
// json.Unmarshal: the same members and values, or the same error.
func TestRawMembersIsJSONUnmarshal(t *testing.T) {
	t.Parallel()
	for _, p := range memberPayloads {
		requireSameMembers(t, []byte(p))
	}
	_, ok := scanMembers([]byte(memberPayloads[3]))
	require.True(t, ok, "the usual payload takes rawMembers' own path")
}

func FuzzRawMembers(f *testing.F) {
	for _, p := range memberPayloads {
		f.Add([]byte(p))
	}
	f.Fuzz(requireSameMembers)
}

func requireSameMembers(t *testing.T, payload []byte) {
	var want map[string]json.RawMessage
	wantErr := json.Unmarshal(payload, &want)
	got, err := rawMembers(payload)
	if wantErr != nil {
		require.EqualError(t, err, wantErr.Error(), "%q", payload)
		return
	}
	require.NoError(t, err, "%q", payload)
	require.Equal(t, want, got, "%q", payload)
}
