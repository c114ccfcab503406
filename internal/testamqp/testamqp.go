// Package testamqp gives tests the RabbitMQ broker the job trigger runs
// against: TEST_AMQP_URL, else amqp://guest:guest@127.0.0.1:5672/ (what
// scripts/deps.sh starts). A test that needs the broker fails, loudly, when
// it is not there: a trigger test that skipped would pass without testing
// anything.
package testamqp

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// DefaultURL is the broker of a developer machine and CI.
const DefaultURL = "amqp://guest:guest@127.0.0.1:5672/"

// URL returns the broker's URL, failing the test when the broker does not
// answer.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("TEST_AMQP_URL")
	if u == "" {
		u = DefaultURL
	}
	conn, err := amqp.DialConfig(u, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		t.Fatalf("RabbitMQ is not reachable at TEST_AMQP_URL (default %s): %v\n"+
			"The trigger's tests need a real broker: install rabbitmq-server and run `bash scripts/deps.sh` "+
			"(it starts it), or point TEST_AMQP_URL at one.", DefaultURL, err)
	}
	_ = conn.Close()
	return u
}

// Exchange returns a name for the test's own exchange, so that tests (and
// other checkouts on the machine) do not hear each other; the exchange is
// deleted when the test ends.
func Exchange(t testing.TB, url string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "bpc-test-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		conn, err := amqp.Dial(url)
		if err != nil {
			return
		}
		defer conn.Close()
		if ch, err := conn.Channel(); err == nil {
			_ = ch.ExchangeDelete(name, false, false)
		}
	})
	return name
}

// Proxy is a TCP proxy in front of the broker that a test cuts (every
// connection closed, new ones refused) and restores, to show what the
// trigger does when the broker goes away without stopping the broker the
// machine shares.
type Proxy struct {
	t      testing.TB
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	// resume is closed when a stall ends (nil: not stalled).
	resume chan struct{}
}

// NewProxy starts a proxy to the broker of brokerURL; URL is brokerURL
// through it. It closes when the test ends.
func NewProxy(t testing.TB, brokerURL string) *Proxy {
	t.Helper()
	u, err := url.Parse(brokerURL)
	if err != nil {
		t.Fatalf("bad broker URL: %v", err)
	}
	p := &Proxy{t: t, target: u.Host, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.Cut)
	return p
}

// URL is brokerURL with the proxy's address.
func (p *Proxy) URL(brokerURL string) string {
	u, _ := url.Parse(brokerURL)
	u.Host = p.addr
	return u.String()
}

// Stall stops reading what clients send, while what the broker sends is
// still passed on: what a broker in a resource alarm does to a
// publishing connection (heartbeats go on, publishes pile up until the
// client's writes block). Unstall (or Cut) ends it.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume == nil {
		p.resume = make(chan struct{})
	}
}

// Unstall reads what clients send again.
func (p *Proxy) Unstall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unstall()
}

func (p *Proxy) unstall() {
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
	}
}

// gate waits while the proxy is stalled.
func (p *Proxy) gate() {
	p.mu.Lock()
	r := p.resume
	p.mu.Unlock()
	if r != nil {
		<-r
	}
}

// Cut closes every proxied connection and refuses new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unstall()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Restore accepts connections again, on the same address.
func (p *Proxy) Restore() {
	p.t.Helper()
	var ln net.Listener
	var err error
	for range 50 { // the closed listener's port may take a moment to free
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatalf("proxy restore on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

func (p *Proxy) pipe(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // cut while dialing
		p.mu.Unlock()
		_ = client.Close()
		_ = server.Close()
		return
	}
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		_ = src.Close()
		done <- struct{}{}
	}
	upstream := func() { // client → broker, through the stall gate
		buf := make([]byte, 32<<10)
		for {
			p.gate()
			n, err := client.Read(buf)
			if n > 0 {
				if _, werr := server.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		_ = server.Close()
		_ = client.Close()
		done <- struct{}{}
	}
	go upstream()
	go cp(client, server)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// ClosedPortURL returns brokerURL pointing at a port nothing listens on.
func ClosedPortURL(t testing.TB, brokerURL string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	u, _ := url.Parse(brokerURL)
	u.Host = addr
	return u.String()
}
