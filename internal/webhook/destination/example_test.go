package destination_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/bpc-platform/bpc/internal/webhook/destination"
)

// Registration refuses URLs that point inside; the fixed resolver stands in
// for DNS.
func ExamplePolicy_CheckURL() {
	p := &destination.Policy{LookupNetIP: func(context.Context, string, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("10.1.2.3")}, nil
	}}
	for _, u := range []string{
		"http://169.254.169.254/latest/meta-data/",
		"http://0x7f000001/",
		"https://hooks.internal.example/bpc",
		"https://[2606:4700:4700::1111]/bpc",
	} {
		fmt.Println(u, "→", p.CheckURL(context.Background(), u))
	}
	// Output:
	// http://169.254.169.254/latest/meta-data/ → 169.254.169.254 is a link-local address
	// http://0x7f000001/ → 0x7f000001 is a non-canonical numeric host
	// https://hooks.internal.example/bpc → hooks.internal.example resolves to a private address
	// https://[2606:4700:4700::1111]/bpc → <nil>
}

// The webhook client dials through the policy: the Control hook judges the
// address each connection is about to use, after DNS.
func ExamplePolicy_DialContext() {
	p := &destination.Policy{}
	client := &http.Client{Transport: &http.Transport{
		Proxy:       nil, // a proxy would dial for us, out of the hook's sight
		DialContext: p.DialContext(p.Dialer(net.Dialer{Timeout: 10 * time.Second})),
	}}
	_, err := client.Get("http://127.0.0.1:5432/")
	fmt.Println(destination.IsDenied(err))
	// Output: true
}
