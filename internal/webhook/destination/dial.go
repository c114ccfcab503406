package destination

import (
	"context"
	"net"
	"net/netip"
	"syscall"
)

// Control is a net.Dialer Control hook: it runs after the address is
// resolved and before the socket connects, and refuses a denied address
// with a *DeniedError, so nothing is sent to it. Because it sees the
// address actually dialed, a name that resolved to a public address at
// registration and to an internal one now (DNS rebinding) is refused too.
func (p *Policy) Control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		// Webhooks are HTTP over TCP; anything else is not ours to allow.
		return &DeniedError{Host: address, Reason: ReasonInvalid}
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &DeniedError{Host: address, Reason: ReasonInvalid}
	}
	return p.CheckAddr(ap.Addr().String(), ap.Addr())
}

// Dialer returns a copy of base whose Control hook enforces the policy.
func (p *Policy) Dialer(base net.Dialer) *net.Dialer {
	d := base
	d.Control = p.Control
	d.ControlContext = nil // would take precedence over Control
	return &d
}

// DialContext returns a dial function for an http.Transport: it refuses a
// host the policy knows to be denied without resolving it (an IP literal,
// a non-canonical numeric spelling, a localhost name), then dials through
// d, whose Control hook (see Dialer) judges every address a name resolves
// to.
func (p *Policy) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: &DeniedError{Host: addr, Reason: ReasonInvalid}}
		}
		if err := p.checkHost(host); err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		return d.DialContext(ctx, network, addr)
	}
}

// checkHost is the part of the policy decidable from the host alone.
func (p *Policy) checkHost(host string) error {
	if a, err := netip.ParseAddr(host); err == nil {
		return p.CheckAddr(host, a)
	}
	name, err := checkHostSyntax(host)
	if err != nil {
		if IsDenied(err) {
			return err
		}
		return &DeniedError{Host: host, Reason: ReasonInvalid}
	}
	if a, err := netip.ParseAddr(name); err == nil {
		return p.CheckAddr(host, a)
	}
	if isLocalhost(name) && !p.AllowPrivate {
		return &DeniedError{Host: host, Reason: ReasonLoopback}
	}
	return nil
}
