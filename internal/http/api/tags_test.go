package api

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// The OpenAPI document states the idempotency-key limit in struct tags,
// which cannot name a constant: they must say what passport enforces.
func TestIdempotencyKeyTagsStateTheDomainLimit(t *testing.T) {
	t.Parallel()
	want := strconv.Itoa(passport.MaxIdempotencyKeyChars)
	for _, typ := range []reflect.Type{reflect.TypeFor[enqueueRequest](), reflect.TypeFor[enqueueInput](), reflect.TypeFor[idKeyBody[tenantRequest]]()} {
		f, ok := typ.FieldByName("IdempotencyKey")
		require.True(t, ok, typ.Name())
		require.Equal(t, want, f.Tag.Get("maxLength"), typ.Name())
	}
}

// GET /v1/jobs states the page size and the statuses in struct tags: they
// must say what the store enforces and the one status mapping lists.
func TestJobListTagsStateTheLimits(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[listJobsParams]()
	limit, ok := typ.FieldByName("Limit")
	require.True(t, ok)
	require.Equal(t, strconv.Itoa(store.MaxJobPage), limit.Tag.Get("maximum"))
	require.Contains(t, limit.Tag.Get("doc"), "default "+strconv.Itoa(store.DefaultJobPage))
	status, ok := typ.FieldByName("Status")
	require.True(t, ok)
	require.Equal(t, strings.Join(bpctype.Statuses, ","), status.Tag.Get("enum"))
}
