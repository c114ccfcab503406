package api

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/core/errcode"
)

// parseUUID parses a required uuid, naming field on error.
func parseUUID(field, value string) (uuid.UUID, error) {
	if value == "" {
		return uuid.Nil, errcode.Invalid(field, "is required")
	}
	id, err := uuid.Parse(value)
	if err != nil || len(value) != 36 {
		return uuid.Nil, errcode.Invalid(field, "must be a uuid such as 3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f")
	}
	if id == uuid.Nil {
		// A well-formed uuid, but no row ever has it: most likely a
		// zero value a client forgot to fill in.
		return uuid.Nil, errcode.Invalid(field, "must not be the nil uuid 00000000-0000-0000-0000-000000000000")
	}
	return id, nil
}

// parseTenantAndID resolves the tenant (tenantOf) and parses the {id} path
// parameter.
func parseTenantAndID(ctx context.Context, tenant, id string) (uuid.UUID, uuid.UUID, error) {
	return parseTenantAnd(ctx, "id", tenant, id)
}

// parseTenantAnd resolves the tenant (tenantOf) and then parses the uuid
// named field.
func parseTenantAnd(ctx context.Context, field, tenant, id string) (uuid.UUID, uuid.UUID, error) {
	tenantID, err := tenantOf(ctx, tenant)
	if err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	parsed, err := parseUUID(field, id)
	return tenantID, parsed, err
}

// parseInt parses an optional integer parameter within [lo, hi]; empty is def.
func parseInt(name, value string, def, lo, hi int) (int, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, errcode.Invalid(name, "must be an integer from %d to %d", lo, hi)
	}
	return n, nil
}

// parseTime parses an optional RFC 3339 time parameter; empty is nil.
func parseTime(name, value string) (*time.Time, error) {
	if value == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, value)
	if err != nil {
		return nil, errcode.Invalid(name, "must be an RFC 3339 time such as 2026-11-27T08:00:00Z")
	}
	return &t, nil
}

// unknownQueryParams returns a VALIDATION_ERROR naming the first query
// parameter of the request that the parameters struct params does not
// declare in a query tag.
func unknownQueryParams(ctx huma.Context, params reflect.Type) []error {
	known := map[string]bool{}
	for i := range params.NumField() {
		if name, _, _ := strings.Cut(params.Field(i).Tag.Get("query"), ","); name != "" {
			known[name] = true
		}
	}
	u := ctx.URL()
	query := u.Query()
	for _, name := range slices.Sorted(maps.Keys(query)) {
		if !known[name] {
			return []error{errcode.Invalid(name, "is not a query parameter of this route")}
		}
	}
	return nil
}
