package api

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/passport"
)

// The OpenAPI document states the idempotency-key limit in struct tags,
// which cannot name a constant: they must say what passport enforces.
func TestIdempotencyKeyTagsStateTheDomainLimit(t *testing.T) {
	t.Parallel()
	want := strconv.Itoa(passport.MaxIdempotencyKeyChars)
	for _, typ := range []reflect.Type{reflect.TypeFor[enqueueRequest](), reflect.TypeFor[enqueueInput](), reflect.TypeFor[idKeyBody]()} {
		f, ok := typ.FieldByName("IdempotencyKey")
		require.True(t, ok, typ.Name())
		require.Equal(t, want, f.Tag.Get("maxLength"), typ.Name())
	}
}
