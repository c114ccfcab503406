package destination

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultResolveTimeout bounds the DNS lookup of a host name at
// registration: long enough for a cold resolver, short enough that a
// request does not hang on a dead one.
const DefaultResolveTimeout = 2 * time.Second

// LookupFunc resolves a host name to addresses, as net.Resolver.LookupNetIP.
type LookupFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

// HostError reports a URL host that is not a well-formed destination at all
// (not a policy decision): a numeric spelling other than a dotted quad, a
// non-ASCII name, a bad port.
type HostError struct {
	// Reason is a sentence fragment shown to the tenant.
	Reason string
}

// Error returns the reason.
func (e *HostError) Error() string { return e.Reason }

// CheckURL checks the destination of an http(s) webhook URL at
// registration: the host must be a well-formed DNS name or a canonical IP
// literal, and neither the literal nor any address the name resolves to may
// be denied. It returns a *HostError or a *DeniedError; scheme, credentials
// and length are the caller's to check.
//
// A name that does not resolve (NXDOMAIN, timeout, no resolver) is
// accepted: the dial-time check refuses a denied address whatever the name
// resolves to later, a tenant may register an endpoint before publishing its
// DNS record, and a resolver hiccup should not fail an API call. With
// private destinations allowed, names are not resolved at all: the only
// addresses still denied are ones no real receiver has, and the dial-time
// check covers them.
func (p *Policy) CheckURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return &HostError{Reason: "must be an absolute URL with a host"}
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return &HostError{Reason: "port must be from 1 to 65535"}
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return &HostError{Reason: "port must be from 1 to 65535"}
	}
	host := u.Hostname()
	if strings.HasPrefix(u.Host, "[") {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() {
			return &HostError{Reason: "host is not a valid IPv6 address"}
		}
		return p.CheckAddr(host, a)
	}
	name, err := checkHostSyntax(host)
	if err != nil {
		return err
	}
	if a, err := netip.ParseAddr(name); err == nil {
		return p.CheckAddr(host, a)
	}
	if isLocalhost(name) {
		// RFC 6761: localhost names are the loopback address whatever DNS
		// says, and resolvers may answer them without asking DNS.
		if p.AllowPrivate {
			return nil
		}
		return &DeniedError{Host: host, Reason: ReasonLoopback}
	}
	if p.AllowPrivate {
		return nil
	}
	return p.checkResolved(ctx, host, name)
}

// checkResolved refuses name if any address it resolves to is denied; a
// failed lookup is accepted (see CheckURL).
func (p *Policy) checkResolved(ctx context.Context, host, name string) error {
	timeout := p.ResolveTimeout
	if timeout <= 0 {
		timeout = DefaultResolveTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	lookup := p.LookupNetIP
	if lookup == nil {
		lookup = net.DefaultResolver.LookupNetIP
	}
	addrs, err := lookup(ctx, "ip", name)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if err := p.CheckAddr(host, a); err != nil {
			var d *DeniedError
			if errors.As(err, &d) {
				d.Resolved = true
			}
			return err
		}
	}
	return nil
}

// checkHostSyntax returns the host in lower case when it is a well-formed
// ASCII DNS name or a canonical dotted-quad IPv4 address. A host whose last
// label is numeric is an IPv4 address to URL parsers (the WHATWG URL
// standard) and to inet_aton, which read 2130706433, 0x7f000001, 0177.0.0.1
// and 127.1 as 127.0.0.1; such spellings are refused outright rather than
// interpreted, so that what the policy checks is what a resolver would
// connect to.
func checkHostSyntax(host string) (string, error) {
	if host == "" || len(host) > 253 {
		return "", &HostError{Reason: "host must be 1 to 253 characters"}
	}
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			return "", &HostError{Reason: "host must be ASCII (write an internationalized name in its xn-- form)"}
		}
	}
	name := strings.ToLower(host)
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	if isNumericLabel(labels[len(labels)-1]) {
		a, err := netip.ParseAddr(name)
		if err != nil || !a.Is4() || a.String() != name {
			return "", &DeniedError{Host: host, Reason: ReasonNonCanonical}
		}
		return name, nil
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", &HostError{Reason: "host is not a valid DNS name"}
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", &HostError{Reason: "host is not a valid DNS name"}
			}
		}
	}
	return name, nil
}

// isNumericLabel reports whether a label would make a URL parser read the
// host as an IPv4 address: decimal digits, or 0x followed by hex digits.
func isNumericLabel(l string) bool {
	if l == "" {
		return false
	}
	digits := l
	hex := false
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		digits, hex = l[2:], true
	}
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		switch {
		case c >= '0' && c <= '9':
		case hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
		default:
			return false
		}
	}
	return true
}

// isLocalhost reports whether name is localhost or under .localhost.
func isLocalhost(name string) bool {
	name = strings.TrimSuffix(name, ".")
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}
