// Package testnet gives tests the misbehaving network peers the webhook
// code must survive: a tarpit, a receiver that accepts connections and
// never answers.
package testnet

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Tarpit listens on loopback, accepts every connection, reads whatever is
// sent and never answers: each webhook delivery to it holds a worker until
// a timeout. It returns the address (host:port). The listener and every
// connection it holds are closed when the test ends — before the service a
// test started earlier stops (cleanups run last first), so deliveries
// still held end at once instead of at their timeout.
func Tarpit(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	return ln.Addr().String()
}
