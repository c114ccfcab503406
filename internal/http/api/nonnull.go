package api

import (
	"reflect"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"
)

// Arrays are never null (SPEC §17): the document types every list member
// as an array (huma.DefaultArrayNullable is off), and emptySlices makes
// the server keep that promise whatever a handler or the store returns: a
// nil slice anywhere in a response body is answered as []. Bytes
// (json.RawMessage, []byte) are values of their own, not lists, and are
// left as they are.

func init() { huma.DefaultArrayNullable = false }

// emptySlices is a Huma transformer: it answers a copy of the body in
// which every nil slice is empty. The body's own values are not changed
// (they may be shared, e.g. cached), only copied where a slice is filled.
func emptySlices(_ huma.Context, _ string, v any) (any, error) {
	if v == nil {
		return v, nil
	}
	rv := reflect.ValueOf(v)
	if !hasSlices(rv.Type()) {
		return v, nil
	}
	cp := reflect.New(rv.Type()).Elem()
	cp.Set(rv)
	fillSlices(cp)
	return cp.Interface(), nil
}

// fillSlices replaces the nil slices in v (settable) by empty ones,
// copying what it descends into.
func fillSlices(v reflect.Value) {
	if !hasSlices(v.Type()) {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		cp := reflect.New(v.Type().Elem())
		cp.Elem().Set(v.Elem())
		fillSlices(cp.Elem())
		v.Set(cp)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && !strings.HasPrefix(f.Tag.Get("json"), "-") {
				fillSlices(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.IsNil() {
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			return
		}
		if !hasSlices(v.Type().Elem()) {
			return
		}
		cp := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(cp, v)
		for i := range cp.Len() {
			fillSlices(cp.Index(i))
		}
		v.Set(cp)
	case reflect.Array:
		for i := range v.Len() {
			fillSlices(v.Index(i))
		}
	}
}

var sliceTypes sync.Map // reflect.Type → bool

// hasSlices reports whether a value of t can hold a (non-byte) slice
// that fillSlices can reach: maps and interfaces are not entered.
func hasSlices(t reflect.Type) bool {
	if b, ok := sliceTypes.Load(t); ok {
		return b.(bool)
	}
	sliceTypes.Store(t, false) // a recursive type: what is below decides
	b := false
	switch t.Kind() {
	case reflect.Slice:
		b = t.Elem().Kind() != reflect.Uint8
	case reflect.Pointer, reflect.Array:
		b = hasSlices(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && !strings.HasPrefix(f.Tag.Get("json"), "-") && hasSlices(f.Type) {
				b = true
				break
			}
		}
	}
	sliceTypes.Store(t, b)
	return b
}
