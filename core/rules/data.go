package rules

import (
	"github.com/bpc-platform/bpc/core/canonjson"
)

// Data is a trace node's data: a JSON object of a few members. The two
// members most nodes carry are fields — "op" (Op, when not empty) and
// "value" (Value, when HasValue) — so that building a node allocates no map
// and boxes no Value; the others are Members. Keys are unique; they are
// sorted when the object is encoded.
type Data struct {
	Op       string
	Value    Value
	HasValue bool
	Members  []Member
}

// Member is one member of Data besides "op" and "value". Val holds only
// strings, booleans, Values and slices of maps of those.
type Member struct {
	Key string
	Val any
}

// valueData is the data {"op": op, "value": v} (no "op" when op is empty).
func valueData(op string, v Value, members ...Member) Data {
	return Data{Op: op, Value: v, HasValue: true, Members: members}
}

// Set sets member key (not "op" or "value") to v, replacing it if present.
func (d *Data) Set(key string, v any) {
	for i := range d.Members {
		if d.Members[i].Key == key {
			d.Members[i].Val = v
			return
		}
	}
	d.Members = append(d.Members, Member{Key: key, Val: v})
}

// AppendCanonical appends the canonical encoding of the object: members
// sorted by key bytes (canonjson.Appender).
func (d Data) AppendCanonical(dst []byte) ([]byte, error) {
	// Indices into Members, with -1 for "op" and -2 for "value"; a node has
	// a handful of members, so an insertion sort on the stack will do.
	var buf [16]int
	idx := buf[:0]
	if d.Op != "" {
		idx = append(idx, -1)
	}
	if d.HasValue {
		idx = append(idx, -2)
	}
	for i := range d.Members {
		idx = append(idx, i)
	}
	key := func(i int) string {
		switch i {
		case -1:
			return "op"
		case -2:
			return "value"
		}
		return d.Members[i].Key
	}
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && key(idx[j]) < key(idx[j-1]); j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	dst = append(dst, '{')
	var err error
	for n, i := range idx {
		if n > 0 {
			dst = append(dst, ',')
		}
		if dst, err = canonjson.AppendString(dst, key(i)); err != nil {
			return dst, err
		}
		dst = append(dst, ':')
		switch i {
		case -1:
			dst, err = canonjson.AppendString(dst, d.Op)
		case -2:
			dst, err = d.Value.AppendCanonical(dst)
		default:
			dst, err = canonjson.Append(dst, d.Members[i].Val)
		}
		if err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// MarshalJSON returns the canonical encoding, so a Node encodes the same way
// through encoding/json.
func (d Data) MarshalJSON() ([]byte, error) { return d.AppendCanonical(nil) }
