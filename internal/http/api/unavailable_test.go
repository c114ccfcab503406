package api

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/store"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// A database that cannot be reached answers 503 DB_UNAVAILABLE, not 500.
func TestDatabaseDownIs503(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@"+closedPort(t)+"/x?connect_timeout=2")
	require.NoError(t, err)
	defer pool.Close()
	s := newTestServer()
	s.Admin, s.Gatherer, s.Store = true, prometheus.NewRegistry(), store.New(pool)

	rec := serve(checked(t, s), http.MethodGet, "/v1/tenants", "", true)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &env))
	require.Equal(t, "DB_UNAVAILABLE", env.Error.Code)
	require.NotContains(t, env.Error.Message, "127.0.0.1", "connection details stay in the log")
}
