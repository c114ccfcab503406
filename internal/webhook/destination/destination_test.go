package destination_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/webhook/destination"
)

// Every address here is only classified, never dialed.
var addrCases = []struct {
	addr   string
	reason string // "" = public
	always bool   // refused even with private destinations allowed
}{
	// Public.
	{"8.8.8.8", "", false},
	{"1.1.1.1", "", false},
	{"93.184.216.34", "", false},
	{"100.63.255.255", "", false}, // just below CGNAT
	{"100.128.0.0", "", false},    // just above CGNAT
	{"172.15.255.255", "", false}, // just below 172.16/12
	{"172.32.0.0", "", false},     // just above
	{"223.255.255.255", "", false},
	{"2606:4700:4700::1111", "", false},
	{"2a00:1450:4001:81b::200e", "", false},
	{"::ffff:8.8.8.8", "", false},       // IPv4-mapped public
	{"64:ff9b::808:808", "", false},     // NAT64 of 8.8.8.8
	{"64:ff9b::8.8.4.4", "", false},     // the same, dotted
	{"2001:4860:4860::8888", "", false}, // outside 2001::/23

	// IPv4 loopback, private, link-local, CGNAT.
	{"127.0.0.1", destination.ReasonLoopback, false},
	{"127.255.255.254", destination.ReasonLoopback, false},
	{"10.0.0.1", destination.ReasonPrivate, false},
	{"10.255.255.255", destination.ReasonPrivate, false},
	{"172.16.0.1", destination.ReasonPrivate, false},
	{"172.31.255.255", destination.ReasonPrivate, false},
	{"192.168.1.1", destination.ReasonPrivate, false},
	{"169.254.169.254", destination.ReasonLinkLocal, true},
	{"169.254.170.2", destination.ReasonLinkLocal, true}, // ECS task metadata
	{"169.254.0.1", destination.ReasonLinkLocal, true},
	{"100.64.0.1", destination.ReasonSharedCGNAT, false},
	{"100.127.255.255", destination.ReasonSharedCGNAT, false},
	{"100.100.100.200", destination.ReasonMetadata, true},
	// Unspecified, "this network", multicast, broadcast, reserved.
	{"0.0.0.0", destination.ReasonUnspecified, true},
	{"0.1.2.3", destination.ReasonUnspecified, true},
	{"224.0.0.1", destination.ReasonMulticast, true},
	{"239.255.255.250", destination.ReasonMulticast, true},
	{"255.255.255.255", destination.ReasonBroadcast, true},
	{"240.0.0.1", destination.ReasonReserved, true},
	{"192.0.0.8", destination.ReasonReserved, false},
	{"192.0.0.170", destination.ReasonReserved, false}, // NAT64 discovery
	{"192.88.99.1", destination.ReasonReserved, false},
	{"198.18.0.1", destination.ReasonReserved, false},
	{"198.19.255.255", destination.ReasonReserved, false},
	{"192.0.2.1", destination.ReasonDocumentation, false},
	{"198.51.100.1", destination.ReasonDocumentation, false},
	{"203.0.113.1", destination.ReasonDocumentation, false},

	// IPv6.
	{"::1", destination.ReasonLoopback, false},
	{"::", destination.ReasonUnspecified, true},
	{"fc00::1", destination.ReasonPrivate, false},
	{"fd00::1", destination.ReasonPrivate, false},
	{"fd00:ec2::254", destination.ReasonMetadata, true},
	{"fe80::1", destination.ReasonLinkLocal, true},
	{"fe80::1%eth0", destination.ReasonLinkLocal, true}, // a zone must not hide the prefix
	{"fec0::1", destination.ReasonPrivate, false},
	{"ff02::1", destination.ReasonMulticast, true},
	{"ff05::2", destination.ReasonMulticast, true},
	{"100::1", destination.ReasonReserved, false},
	{"2001:db8::1", destination.ReasonDocumentation, false},
	{"3fff::1", destination.ReasonDocumentation, false},
	{"2001::1", destination.ReasonTunnel, false},           // Teredo
	{"2002:7f00:1::1", destination.ReasonTunnel, false},    // 6to4 of 127.0.0.1
	{"2001:2::1", destination.ReasonReserved, false},       // benchmarking
	{"64:ff9b:1::1", destination.ReasonPrivate, false},     // local-use NAT64
	{"5f00::1", destination.ReasonReserved, false},         // SRv6
	{"4000::1", destination.ReasonReserved, false},         // outside 2000::/3
	{"::127.0.0.1", destination.ReasonReserved, false},     // IPv4-compatible (deprecated)
	{"::ffff:0:7f00:1", destination.ReasonReserved, false}, // SIIT-translated

	// IPv4-mapped and NAT64 forms of denied IPv4 addresses.
	{"::ffff:127.0.0.1", destination.ReasonLoopback, false},
	{"::ffff:7f00:1", destination.ReasonLoopback, false},
	{"::ffff:10.0.0.1", destination.ReasonPrivate, false},
	{"::ffff:169.254.169.254", destination.ReasonLinkLocal, true},
	{"::ffff:0.0.0.0", destination.ReasonUnspecified, true},
	{"::ffff:255.255.255.255", destination.ReasonBroadcast, true},
	{"64:ff9b::127.0.0.1", destination.ReasonLoopback, false},
	{"64:ff9b::a9fe:a9fe", destination.ReasonLinkLocal, true},
	{"64:ff9b::10.1.2.3", destination.ReasonPrivate, false},
}

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	strict := &destination.Policy{}
	permissive := &destination.Policy{AllowPrivate: true}
	for _, tc := range addrCases {
		t.Run(tc.addr, func(t *testing.T) {
			t.Parallel()
			a := netip.MustParseAddr(tc.addr)

			err := strict.CheckAddr(tc.addr, a)
			if tc.reason == "" {
				require.NoError(t, err)
			} else {
				var d *destination.DeniedError
				require.ErrorAs(t, err, &d)
				require.Equal(t, tc.reason, d.Reason)
				require.Contains(t, err.Error(), tc.addr)
			}

			err = permissive.CheckAddr(tc.addr, a)
			if tc.always {
				require.True(t, destination.IsDenied(err), "%s is refused even with private destinations allowed", tc.addr)
			} else {
				require.NoError(t, err, "private destinations allowed")
			}
		})
	}
}

func TestCheckAddrRefusesTheZeroAddr(t *testing.T) {
	t.Parallel()
	require.True(t, destination.IsDenied((&destination.Policy{AllowPrivate: true}).CheckAddr("", netip.Addr{})))
}

// fakeDNS answers from a table; a name not in it does not exist. calls
// counts lookups.
type fakeDNS struct {
	table map[string][]string
	calls atomic.Int64
}

var errNoSuchHost = errors.New("no such host")

func (f *fakeDNS) lookup(ctx context.Context, network, host string) ([]netip.Addr, error) {
	f.calls.Add(1)
	if host == "slow.example" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	addrs, ok := f.table[strings.TrimSuffix(host, ".")]
	if !ok {
		return nil, errNoSuchHost
	}
	out := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		out[i] = netip.MustParseAddr(a)
	}
	return out, nil
}

func newFakeDNS() *fakeDNS {
	return &fakeDNS{table: map[string][]string{
		"hooks.example":         {"93.184.216.34", "2606:2800:220:1::1"},
		"internal.example":      {"10.0.0.5"},
		"metadata.example":      {"169.254.169.254"},
		"mixed.example":         {"8.8.8.8", "127.0.0.1"},
		"ula.example":           {"fd00::1"},
		"mapped.example":        {"::ffff:192.168.0.1"},
		"nat64-loop.example":    {"64:ff9b::7f00:1"},
		"cgnat.example":         {"100.64.1.1"},
		"127.0.0.1.nip.example": {"127.0.0.1"},
	}}
}

// The reproductions of the SSRF report and their neighbours, each refused
// at registration with private destinations refused.
func TestCheckURLRefuses(t *testing.T) {
	t.Parallel()
	dns := newFakeDNS()
	p := &destination.Policy{LookupNetIP: dns.lookup}
	for _, tc := range []struct {
		url    string
		reason string // a Reason constant, or "host" for a *HostError
	}{
		{"http://127.0.0.1:5432/", destination.ReasonLoopback},
		{"http://169.254.169.254/latest/meta-data/", destination.ReasonLinkLocal},
		{"http://10.0.0.1/", destination.ReasonPrivate},
		{"http://172.16.5.4/", destination.ReasonPrivate},
		{"http://192.168.1.1/", destination.ReasonPrivate},
		{"http://100.64.0.1/", destination.ReasonSharedCGNAT},
		{"http://0.0.0.0/", destination.ReasonUnspecified},
		{"http://224.0.0.1/", destination.ReasonMulticast},
		{"http://255.255.255.255/", destination.ReasonBroadcast},
		{"http://[::1]/", destination.ReasonLoopback},
		{"http://[::]/", destination.ReasonUnspecified},
		{"http://[fd00:ec2::254]/", destination.ReasonMetadata},
		{"http://[fe80::1]/", destination.ReasonLinkLocal},
		{"http://[fe80::1%25eth0]/", destination.ReasonLinkLocal},
		{"http://[::ffff:127.0.0.1]/", destination.ReasonLoopback},
		{"http://[::ffff:a9fe:a9fe]/", destination.ReasonLinkLocal},
		{"http://[64:ff9b::10.0.0.1]/", destination.ReasonPrivate},
		// Numeric spellings of 127.0.0.1 that inet_aton and URL parsers accept.
		{"http://0x7f000001/", destination.ReasonNonCanonical},
		{"http://0X7F000001/", destination.ReasonNonCanonical},
		{"http://2130706433/", destination.ReasonNonCanonical},
		{"http://017700000001/", destination.ReasonNonCanonical},
		{"http://0177.0.0.1/", destination.ReasonNonCanonical},
		{"http://0x7f.0.0.1/", destination.ReasonNonCanonical},
		{"http://127.1/", destination.ReasonNonCanonical},
		{"http://127.0.1/", destination.ReasonNonCanonical},
		{"http://127.000.000.001/", destination.ReasonNonCanonical},
		{"http://127.0.0.1./", destination.ReasonNonCanonical},
		{"http://8.8.8.8./", destination.ReasonNonCanonical},
		{"http://1.2.3.4.5/", destination.ReasonNonCanonical},
		{"http://foo.123/", destination.ReasonNonCanonical},
		{"http://0x/", destination.ReasonNonCanonical},
		// url.Parse refuses percent-encoded host bytes.
		{"http://%31%32%37.0.0.1/", "host"},
		// Localhost names (RFC 6761) without asking DNS.
		{"http://localhost/hook", destination.ReasonLoopback},
		{"http://LOCALHOST:8080/", destination.ReasonLoopback},
		{"http://app.localhost/", destination.ReasonLoopback},
		{"http://localhost./", destination.ReasonLoopback},
		// Names that resolve to denied addresses, any one of them.
		{"https://internal.example/hook", destination.ReasonPrivate},
		{"https://metadata.example/", destination.ReasonLinkLocal},
		{"https://mixed.example/", destination.ReasonLoopback},
		{"https://ula.example/", destination.ReasonPrivate},
		{"https://mapped.example/", destination.ReasonPrivate},
		{"https://nat64-loop.example/", destination.ReasonLoopback},
		{"https://cgnat.example/", destination.ReasonSharedCGNAT},
		{"https://127.0.0.1.nip.example/", destination.ReasonLoopback},
		{"https://INTERNAL.example./", destination.ReasonPrivate},
		// Not a destination at all.
		{"http://bücher.example/", "host"},
		{"http://under score!.example/", "host"},
		{"http://a..example/", "host"},
		{"http://example.com:0/", "host"},
		{"http://example.com:/", "host"},
		{"http://[127.0.0.1]/", "host"},
		{"http:///path", "host"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			err := p.CheckURL(t.Context(), tc.url)
			require.Error(t, err)
			if tc.reason == "host" {
				var h *destination.HostError
				require.ErrorAs(t, err, &h)
				return
			}
			var d *destination.DeniedError
			require.ErrorAs(t, err, &d)
			require.Equal(t, tc.reason, d.Reason)
		})
	}
}

func TestCheckURLAccepts(t *testing.T) {
	t.Parallel()
	dns := newFakeDNS()
	p := &destination.Policy{LookupNetIP: dns.lookup}
	for _, u := range []string{
		"https://hooks.example/bpc",
		"https://hooks.example:8443/bpc?x=1",
		"https://HOOKS.example./bpc",
		"http://8.8.8.8/",
		"https://[2606:4700:4700::1111]:443/",
		"https://[::ffff:8.8.8.8]/",
		"https://_acme.hooks.example/", // not in the table: does not resolve, accepted
		"https://nxdomain.example/",
	} {
		require.NoError(t, p.CheckURL(t.Context(), u), u)
	}
}

// A name that does not resolve in time is accepted (the dial-time check
// still judges whatever it resolves to later), and the request is not held
// longer than the timeout: the lookup ends by ResolveTimeout's deadline,
// the caller's context having none.
func TestCheckURLResolveTimeoutAccepts(t *testing.T) {
	t.Parallel()
	dns := newFakeDNS()
	var ended error
	lookup := func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		addrs, err := dns.lookup(ctx, network, host)
		ended = ctx.Err()
		return addrs, err
	}
	p := &destination.Policy{LookupNetIP: lookup, ResolveTimeout: 50 * time.Millisecond}
	require.NoError(t, p.CheckURL(t.Context(), "https://slow.example/"))
	require.ErrorIs(t, ended, context.DeadlineExceeded)
}

// With private destinations allowed (dev, test) names are not resolved;
// literals are judged against the always-denied set.
func TestCheckURLAllowPrivate(t *testing.T) {
	t.Parallel()
	dns := newFakeDNS()
	p := &destination.Policy{AllowPrivate: true, LookupNetIP: dns.lookup}
	for _, u := range []string{
		"http://127.0.0.1:5432/", "http://10.0.0.1/", "http://[::1]:8080/", "http://localhost:8080/",
		"http://[fd00::1]/", "https://metadata.example/", "http://100.64.0.1/",
	} {
		require.NoError(t, p.CheckURL(t.Context(), u), u)
	}
	require.Zero(t, dns.calls.Load(), "no lookups with private destinations allowed")
	for _, u := range []string{
		"http://169.254.169.254/", "http://[fd00:ec2::254]/", "http://0.0.0.0:8080/", "http://[::]/",
		"http://224.0.0.1/", "http://255.255.255.255/", "http://100.100.100.200/", "http://[fe80::1]/",
		"http://[::ffff:169.254.169.254]/",
	} {
		require.True(t, destination.IsDenied(p.CheckURL(t.Context(), u)), u)
	}
	// Non-canonical numeric hosts are refused whatever the setting.
	require.True(t, destination.IsDenied(p.CheckURL(t.Context(), "http://2130706433/")))
}

// The message shown to a tenant for a name does not give the address the
// name resolved to.
func TestDeniedErrorHidesResolvedAddress(t *testing.T) {
	t.Parallel()
	p := &destination.Policy{LookupNetIP: newFakeDNS().lookup}
	err := p.CheckURL(t.Context(), "https://internal.example/")
	require.EqualError(t, err, "internal.example resolves to a private address")
	var d *destination.DeniedError
	require.ErrorAs(t, err, &d)
	require.Equal(t, netip.MustParseAddr("10.0.0.5"), d.Addr, "the log gets the address")

	require.EqualError(t, p.CheckURL(t.Context(), "http://10.0.0.1/"), "10.0.0.1 is a private address")
	require.EqualError(t, p.CheckURL(t.Context(), "http://2130706433/"), "2130706433 is a non-canonical numeric host")
}
