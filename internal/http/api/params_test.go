package api

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
)

func TestParseUUIDCallsTheNilUUIDByItsName(t *testing.T) {
	t.Parallel()
	_, err := parseUUID("tenant_id", "00000000-0000-0000-0000-000000000000")
	require.Equal(t, "tenant_id", errcode.As(err).Field)
	require.Equal(t, "VALIDATION_ERROR: tenant_id: must not be the nil uuid 00000000-0000-0000-0000-000000000000", err.Error())

	_, err = parseUUID("tenant_id", "tenant-1")
	require.Equal(t, "VALIDATION_ERROR: tenant_id: must be a uuid such as 3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f", err.Error())
}
