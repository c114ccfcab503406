package destination_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/webhook/destination"
)

func TestControlRefusesDeniedAddresses(t *testing.T) {
	t.Parallel()
	strict := &destination.Policy{}
	for _, tc := range []struct {
		network, address string
		denied           bool
	}{
		{"tcp4", "127.0.0.1:5432", true},
		{"tcp4", "10.0.0.1:80", true},
		{"tcp4", "169.254.169.254:80", true},
		{"tcp6", "[::1]:443", true},
		{"tcp6", "[::ffff:127.0.0.1]:80", true},
		{"tcp6", "[fe80::1%eth0]:80", true},
		{"tcp6", "[fd00:ec2::254]:80", true},
		{"tcp6", "[64:ff9b::a9fe:a9fe]:80", true},
		{"udp4", "8.8.8.8:53", true}, // not TCP
		{"tcp", "not-an-address", true},
		{"tcp4", "8.8.8.8:443", false},
		{"tcp6", "[2606:4700:4700::1111]:443", false},
	} {
		err := strict.Control(tc.network, tc.address, nil)
		require.Equal(t, tc.denied, destination.IsDenied(err), "%s %s: %v", tc.network, tc.address, err)
	}
	permissive := &destination.Policy{AllowPrivate: true}
	require.NoError(t, permissive.Control("tcp4", "127.0.0.1:8080", nil))
	require.True(t, destination.IsDenied(permissive.Control("tcp4", "169.254.169.254:80", nil)))
}

// countingListener is a loopback TCP listener that answers HTTP 200 and
// counts the connections it accepted: a refused dial must leave it at zero.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func newCountingListener(t *testing.T) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	l := &countingListener{Listener: ln}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Internal", "topology")
		_, _ = io.WriteString(w, "internal body")
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

func (l *countingListener) port() string {
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// clientFor is an HTTP client dialing through the policy, with no proxy.
func clientFor(p *destination.Policy, base net.Dialer) *http.Client {
	base.Timeout = 5 * time.Second
	return &http.Client{Transport: &http.Transport{
		Proxy:             nil,
		DialContext:       p.DialContext(p.Dialer(base)),
		DisableKeepAlives: true,
	}}
}

func post(c *http.Client, url string) error {
	resp, err := c.Post(url, "application/json", strings.NewReader(`{}`))
	if err == nil {
		_ = resp.Body.Close()
	}
	return err
}

// Loopback addresses are refused before connecting, however they are
// spelled; the same dial with private destinations allowed connects, which
// shows the refusal is the policy's.
func TestDialRefusesBeforeConnecting(t *testing.T) {
	t.Parallel()
	l := newCountingListener(t)
	strict := clientFor(&destination.Policy{}, net.Dialer{})
	for _, host := range []string{"127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "2130706433", "127.1"} {
		err := post(strict, "http://"+host+":"+l.port()+"/hook")
		require.True(t, destination.IsDenied(err), "%s: %v", host, err)
	}
	// A name the system resolver maps to 127.0.0.1 (/etc/hosts), dialed
	// through the Dialer alone: only the Control hook stands in the way.
	p := &destination.Policy{}
	_, err := p.Dialer(net.Dialer{Timeout: 5 * time.Second}).DialContext(t.Context(), "tcp", "localhost:"+l.port())
	require.True(t, destination.IsDenied(err), "%v", err)
	time.Sleep(50 * time.Millisecond)
	require.Zero(t, l.accepted.Load(), "nothing reached the listener")

	require.NoError(t, post(clientFor(&destination.Policy{AllowPrivate: true}, net.Dialer{}), "http://127.0.0.1:"+l.port()+"/hook"))
	require.Equal(t, int64(1), l.accepted.Load())
}

// DNS rebinding: a name resolves to a public address when the endpoint is
// registered and to 127.0.0.1 when the webhook is sent. Registration
// passes; the Control hook sees 127.0.0.1 at dial time and refuses it.
// Resolution goes through a DNS server in this process (over net.Pipe), so
// no packet leaves the test.
func TestDialTimeRefusesDNSRebinding(t *testing.T) {
	t.Parallel()
	l := newCountingListener(t)
	dns := &rebindingDNS{name: "rebind.test.", first: netip.MustParseAddr("93.184.216.34"), then: netip.MustParseAddr("127.0.0.1")}
	resolver := &net.Resolver{PreferGo: true, Dial: dns.dial}
	url := "http://rebind.test:" + l.port() + "/hook"

	p := &destination.Policy{LookupNetIP: resolver.LookupNetIP}
	require.NoError(t, p.CheckURL(t.Context(), url), "public at registration")
	require.Positive(t, dns.aQueries.Load())

	err := post(clientFor(p, net.Dialer{Resolver: resolver}), url)
	var d *destination.DeniedError
	require.ErrorAs(t, err, &d, "refused at dial time")
	require.Equal(t, destination.ReasonLoopback, d.Reason)
	require.Equal(t, netip.MustParseAddr("127.0.0.1"), d.Addr)
	time.Sleep(50 * time.Millisecond)
	require.Zero(t, l.accepted.Load(), "nothing reached the listener")

	// The same resolution with private destinations allowed connects: the
	// name really led to the listener.
	require.NoError(t, post(clientFor(&destination.Policy{AllowPrivate: true}, net.Dialer{Resolver: resolver}), url))
	require.Equal(t, int64(1), l.accepted.Load())
}

// rebindingDNS answers A queries for name with first once, then with then;
// other queries get no answer. It speaks DNS over TCP framing on an
// in-memory connection.
type rebindingDNS struct {
	name        string
	first, then netip.Addr
	aQueries    atomic.Int64
}

func (s *rebindingDNS) dial(context.Context, string, string) (net.Conn, error) {
	client, server := net.Pipe()
	go s.serve(server)
	return client, nil
}

func (s *rebindingDNS) serve(c net.Conn) {
	defer c.Close()
	for {
		var n uint16
		if err := binary.Read(c, binary.BigEndian, &n); err != nil {
			return
		}
		q := make([]byte, n)
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		resp, err := s.answer(q)
		if err != nil {
			return
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}

// answer builds the response to one query: the question echoed, and an A
// record when it asks for name's A record.
func (s *rebindingDNS) answer(q []byte) ([]byte, error) {
	if len(q) < 12 {
		return nil, errors.New("short query")
	}
	// The question: labels up to the root, then type and class.
	i := 12
	var labels []string
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil, errors.New("bad name")
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	end := i + 1 + 4
	if end > len(q) {
		return nil, errors.New("short question")
	}
	qtype := binary.BigEndian.Uint16(q[i+1:])
	name := strings.ToLower(strings.Join(labels, ".")) + "."

	resp := append([]byte(nil), q[:2]...)              // id
	resp = binary.BigEndian.AppendUint16(resp, 0x8180) // response, recursion desired and available, no error
	ancount := uint16(0)
	if qtype == 1 && name == s.name {
		ancount = 1
	}
	resp = binary.BigEndian.AppendUint16(resp, 1) // qdcount
	resp = binary.BigEndian.AppendUint16(resp, ancount)
	resp = binary.BigEndian.AppendUint16(resp, 0) // nscount
	resp = binary.BigEndian.AppendUint16(resp, 0) // arcount
	resp = append(resp, q[12:end]...)
	if ancount == 1 {
		addr := s.then
		if s.aQueries.Add(1) == 1 {
			addr = s.first
		}
		resp = append(resp, 0xc0, 12) // pointer to the question's name
		resp = binary.BigEndian.AppendUint16(resp, 1)
		resp = binary.BigEndian.AppendUint16(resp, 1)
		resp = binary.BigEndian.AppendUint32(resp, 0) // TTL: nothing may cache it
		resp = binary.BigEndian.AppendUint16(resp, 4)
		a4 := addr.As4()
		resp = append(resp, a4[:]...)
	}
	return resp, nil
}
