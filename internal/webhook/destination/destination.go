// Package destination decides where webhooks may be sent. A tenant chooses
// an endpoint's URL, and the service POSTs to it from inside the network the
// service runs in; without a policy a tenant could make the service reach
// its database, the cloud metadata service or any internal host and read
// the answers back (server-side request forgery).
//
// The policy is applied twice. At registration, CheckURL refuses URLs whose
// host is, spells or resolves to a non-public address, so that a mistake is
// reported at once. At dial time, the Control hook of the webhook client's
// net.Dialer sees the address each socket is about to connect to — after
// DNS resolution — and refuses a denied one before any packet is sent. The
// dial-time check is the one that holds: DNS answers may change between
// registration and delivery (DNS rebinding), and endpoints may have been
// stored before the policy existed.
//
// Which addresses are denied:
//
//   - with private destinations refused (AllowPrivate false, the production
//     default): every address that is not public unicast — loopback,
//     private (RFC 1918, IPv6 ULA), link-local, CGNAT shared space,
//     unspecified, multicast, broadcast, documentation, benchmarking and
//     other IANA special-purpose ranges, and IPv6 outside global unicast
//     2000::/3. IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are judged as
//     their IPv4 address, NAT64 addresses (64:ff9b::/96) as the IPv4
//     address they embed; tunnel prefixes (6to4, Teredo) are refused.
//   - always, even with private destinations allowed (dev and test, whose
//     receivers run on 127.0.0.1): the addresses no webhook receiver can
//     have or that reach cloud credentials — unspecified (0.0.0.0/8, ::,
//     which Linux connects to the local host), link-local (169.254.0.0/16
//     and fe80::/10, where every cloud serves instance metadata), the
//     cloud metadata addresses outside link-local (fd00:ec2::254,
//     100.100.100.200), multicast, and 240.0.0.0/4 with the broadcast
//     address.
package destination

import (
	"errors"
	"net/netip"
	"time"
)

// Reasons an address is denied; they name a class of address, never the
// address, so that they are safe to show to the tenant.
const (
	ReasonLoopback      = "loopback"
	ReasonPrivate       = "private"
	ReasonLinkLocal     = "link-local"
	ReasonMetadata      = "cloud metadata"
	ReasonSharedCGNAT   = "shared (CGNAT)"
	ReasonUnspecified   = "unspecified"
	ReasonMulticast     = "multicast"
	ReasonBroadcast     = "broadcast"
	ReasonReserved      = "reserved"
	ReasonDocumentation = "documentation"
	ReasonTunnel        = "transition tunnel"
	ReasonNonCanonical  = "non-canonical numeric host"
	ReasonInvalid       = "not an IP address"
)

// DeniedError reports a destination the policy refuses. The worker turns it
// into WEBHOOK_DESTINATION_DENIED and the API into a VALIDATION_ERROR on url.
type DeniedError struct {
	// Host is the host as written in the URL or dialed address.
	Host string
	// Addr is the refused address; invalid when the host itself was refused
	// (a non-canonical numeric spelling).
	Addr netip.Addr
	// Reason is one of the Reason constants.
	Reason string
	// Resolved is true when Addr came from resolving the name Host.
	Resolved bool
}

// Error says what was refused and why. For a name it does not give the
// address the name resolved to: the message may be shown to the tenant, and
// the resolved addresses of internal names are not theirs to learn.
func (e *DeniedError) Error() string {
	phrase := reasonPhrase[e.Reason]
	if phrase == "" {
		phrase = "a " + e.Reason + " address"
	}
	if e.Resolved {
		return e.Host + " resolves to " + phrase
	}
	return e.Host + " is " + phrase
}

// reasonPhrase completes "<host> is …" for each reason.
var reasonPhrase = map[string]string{
	ReasonLoopback:      "a loopback address",
	ReasonPrivate:       "a private address",
	ReasonLinkLocal:     "a link-local address",
	ReasonMetadata:      "a cloud metadata address",
	ReasonSharedCGNAT:   "a shared (CGNAT) address",
	ReasonUnspecified:   "an unspecified address",
	ReasonMulticast:     "a multicast address",
	ReasonBroadcast:     "the broadcast address",
	ReasonReserved:      "a reserved address",
	ReasonDocumentation: "a documentation address",
	ReasonTunnel:        "a transition-tunnel address",
	ReasonNonCanonical:  "a non-canonical numeric host",
	ReasonInvalid:       "not an IP address",
}

// IsDenied reports whether err is or wraps a *DeniedError.
func IsDenied(err error) bool {
	var d *DeniedError
	return errors.As(err, &d)
}

// Policy decides which destinations webhooks may reach. The zero value
// refuses private destinations and resolves names with the system resolver.
type Policy struct {
	// AllowPrivate admits loopback, private, CGNAT and the other non-public
	// ranges (BPC_WEBHOOK_ALLOW_PRIVATE, true in dev and test); the
	// always-denied addresses stay refused.
	AllowPrivate bool
	// LookupNetIP resolves a host name at registration (its signature is
	// net.Resolver.LookupNetIP's); nil uses net.DefaultResolver. Tests set it
	// so that they need no DNS.
	LookupNetIP LookupFunc
	// ResolveTimeout bounds the registration lookup; zero means
	// DefaultResolveTimeout.
	ResolveTimeout time.Duration
}

// rangeRule is one special-purpose range: its reason, and whether it is
// refused even when private destinations are allowed.
type rangeRule struct {
	prefix netip.Prefix
	reason string
	always bool
}

func rule(cidr, reason string, always bool) rangeRule {
	return rangeRule{prefix: netip.MustParsePrefix(cidr), reason: reason, always: always}
}

// v4Rules are the IPv4 special-purpose ranges (IANA's registry, RFC 6890 and
// successors), most specific first where they overlap.
var v4Rules = []rangeRule{
	rule("255.255.255.255/32", ReasonBroadcast, true),
	rule("100.100.100.200/32", ReasonMetadata, true), // Alibaba Cloud, inside CGNAT space
	rule("0.0.0.0/8", ReasonUnspecified, true),       // "this network": Linux connects 0.0.0.0 to the local host
	rule("10.0.0.0/8", ReasonPrivate, false),
	rule("100.64.0.0/10", ReasonSharedCGNAT, false),
	rule("127.0.0.0/8", ReasonLoopback, false),
	rule("169.254.0.0/16", ReasonLinkLocal, true), // 169.254.169.254: instance metadata on every cloud
	rule("172.16.0.0/12", ReasonPrivate, false),
	rule("192.0.0.0/24", ReasonReserved, false), // IETF protocol assignments
	rule("192.0.2.0/24", ReasonDocumentation, false),
	rule("192.88.99.0/24", ReasonReserved, false), // former 6to4 relay anycast
	rule("192.168.0.0/16", ReasonPrivate, false),
	rule("198.18.0.0/15", ReasonReserved, false), // benchmarking
	rule("198.51.100.0/24", ReasonDocumentation, false),
	rule("203.0.113.0/24", ReasonDocumentation, false),
	rule("224.0.0.0/4", ReasonMulticast, true),
	rule("240.0.0.0/4", ReasonReserved, true),
}

// v6Rules are the IPv6 special-purpose ranges checked before the global
// unicast test; IPv4-mapped addresses never get here (they are unmapped)
// and NAT64 is judged by the IPv4 address it embeds.
var v6Rules = []rangeRule{
	rule("::/128", ReasonUnspecified, true),
	rule("::1/128", ReasonLoopback, false),
	rule("fd00:ec2::254/128", ReasonMetadata, true), // AWS instance metadata over IPv6
	rule("64:ff9b:1::/48", ReasonPrivate, false),    // local-use NAT64
	rule("100::/64", ReasonReserved, false),         // discard-only
	rule("2001::/32", ReasonTunnel, false),          // Teredo
	rule("2001:db8::/32", ReasonDocumentation, false),
	rule("2001::/23", ReasonReserved, false), // IETF protocol assignments (benchmarking, ORCHID, …)
	rule("2002::/16", ReasonTunnel, false),   // 6to4: embeds an IPv4 address
	rule("3fff::/20", ReasonDocumentation, false),
	rule("5f00::/16", ReasonReserved, false), // SRv6 SIDs
	rule("fc00::/7", ReasonPrivate, false),   // unique local
	rule("fe80::/10", ReasonLinkLocal, true),
	rule("fec0::/10", ReasonPrivate, false), // deprecated site-local
	rule("ff00::/8", ReasonMulticast, true),
}

var (
	nat64         = netip.MustParsePrefix("64:ff9b::/96")
	globalUnicast = netip.MustParsePrefix("2000::/3")
)

// classify returns why a is not a public address ("" when it is) and
// whether it is refused even when private destinations are allowed.
func classify(a netip.Addr) (reason string, always bool) {
	// Prefix.Contains never matches a zoned address, and a zone changes
	// nothing about where the address leads.
	a = a.WithZone("").Unmap()
	if !a.IsValid() {
		return ReasonInvalid, true
	}
	if a.Is4() {
		for _, r := range v4Rules {
			if r.prefix.Contains(a) {
				return r.reason, r.always
			}
		}
		return "", false
	}
	if nat64.Contains(a) {
		b := a.As16()
		return classify(netip.AddrFrom4([4]byte(b[12:16])))
	}
	for _, r := range v6Rules {
		if r.prefix.Contains(a) {
			return r.reason, r.always
		}
	}
	if !globalUnicast.Contains(a) {
		// Everything else outside 2000::/3 is unassigned or special
		// (IPv4-compatible ::a.b.c.d, SIIT ::ffff:0:a.b.c.d, …).
		return ReasonReserved, false
	}
	return "", false
}

// CheckAddr returns a *DeniedError when the policy refuses a, else nil.
// host is what the caller asked for, kept in the error for the log.
func (p *Policy) CheckAddr(host string, a netip.Addr) error {
	reason, always := classify(a)
	if reason == "" || (p.AllowPrivate && !always) {
		return nil
	}
	return &DeniedError{Host: host, Addr: a.WithZone("").Unmap(), Reason: reason}
}
