package store_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/store"
)

func TestIsUnavailable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, connErr := pgx.Connect(context.Background(), "postgres://postgres@"+addr+"/x?connect_timeout=2")
	require.Error(t, connErr)

	require.True(t, store.IsUnavailable(connErr), "connection refused: %v", connErr)
	require.True(t, store.IsUnavailable(fmt.Errorf("loading: %w", &pgconn.PgError{Code: "57P01"})), "admin shutdown")
	require.True(t, store.IsUnavailable(&pgconn.PgError{Code: "08006"}), "connection failure")
	require.True(t, store.IsUnavailable(&pgconn.PgError{Code: "53300"}), "too many connections")
	require.False(t, store.IsUnavailable(&pgconn.PgError{Code: "23505"}), "unique violation is the query's fault")
	require.False(t, store.IsUnavailable(errors.New("boom")))
	require.False(t, store.IsUnavailable(nil))
}
