package jobargs

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// rawMembers is json.Unmarshal(payload, &map[string]json.RawMessage), the
// first step of decoding every enqueued job's payload, without its
// reflection (json.Unmarshal calls each member's UnmarshalJSON, scanning
// the member twice): after json.Valid, the members of a valid object are
// found by their brackets and quotes. The map's values are payload's own
// bytes, not copies. A payload that is not a valid JSON object, or a
// member name with an escape or invalid UTF-8, is json.Unmarshal's.
func rawMembers(payload []byte) (map[string]json.RawMessage, error) {
	if raw, ok := scanMembers(payload); ok {
		return raw, nil
	}
	var raw map[string]json.RawMessage
	err := json.Unmarshal(payload, &raw)
	return raw, err
}

func scanMembers(data []byte) (map[string]json.RawMessage, bool) {
	if !json.Valid(data) {
		return nil, false
	}
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return nil, false
	}
	raw := map[string]json.RawMessage{}
	if i = skipSpace(data, i+1); data[i] == '}' {
		return raw, true
	}
	// data is valid JSON: a member is a name, a colon and a value, followed
	// by a comma or the closing brace.
	for {
		end := stringEnd(data, i)
		name := data[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 || !utf8.Valid(name) {
			return nil, false // json.Unmarshal unescapes, or replaces what is not UTF-8
		}
		i = skipSpace(data, skipSpace(data, end)+1)
		end = valueEnd(data, i)
		raw[string(name)] = data[i:end:end] // a repeated member: the last wins, as in json.Unmarshal
		if i = skipSpace(data, end); data[i] == '}' {
			return raw, true
		}
		i = skipSpace(data, i+1)
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index after the closing quote of the string at i.
func stringEnd(data []byte, i int) int {
	for j := i + 1; ; j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
}

// valueEnd is the index after the valid JSON value at i.
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for j := i; ; j++ {
			switch data[j] {
			case '"':
				j = stringEnd(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
	}
	j := i
	for j < len(data) && bytes.IndexByte([]byte(",}] \t\n\r"), data[j]) < 0 {
		j++
	}
	return j
}
