package httplimit_test

import (
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/ratelab/ratelab/httplimit"
)

// Who the client is: IPv4 whole, IPv6 by its prefix, forwarded addresses
// believed only from your own proxies and read from the right, so that a
// spoofed entry on the left never picks a bucket.
func TestClientKey(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	tests := []struct {
		name    string
		client  httplimit.Client
		remote  string
		headers map[string]string
		want    string // "" for an error
	}{
		{"ipv4 whole", httplimit.Client{}, "203.0.113.7:5555", nil, "203.0.113.7"},
		{"ipv4 without port", httplimit.Client{}, "203.0.113.7", nil, "203.0.113.7"},
		{"ipv4-mapped is ipv4", httplimit.Client{}, "[::ffff:203.0.113.7]:1", nil, "203.0.113.7"},
		{"ipv6 by /56", httplimit.Client{}, "[2001:db8:1234:5678::1]:443", nil, "2001:db8:1234:5600::/56"},
		{"ipv6 neighbour, same bucket", httplimit.Client{}, "[2001:db8:1234:56ff:ffff::9]:443", nil, "2001:db8:1234:5600::/56"},
		{"ipv6 by /64", httplimit.Client{IPv6Prefix: 64}, "[2001:db8:1234:5678::1]:443", nil, "2001:db8:1234:5678::/64"},
		{"ipv6 whole with /128", httplimit.Client{IPv6Prefix: 128}, "[2001:db8::1]:443", nil, "2001:db8::1/128"},
		{"ipv6 zone dropped", httplimit.Client{}, "[fe80::1%eth0]:443", nil, "fe80::/56"},
		{"no proxies: X-Forwarded-For ignored", httplimit.Client{}, "203.0.113.7:1",
			map[string]string{"X-Forwarded-For": "198.51.100.1"}, "203.0.113.7"},
		{"untrusted peer: headers ignored", httplimit.Client{TrustedProxies: proxies}, "203.0.113.7:1",
			map[string]string{"X-Forwarded-For": "198.51.100.1", "Forwarded": "for=198.51.100.2"}, "203.0.113.7"},
		{"trusted proxy: rightmost hop", httplimit.Client{TrustedProxies: proxies}, "10.0.0.2:1",
			map[string]string{"X-Forwarded-For": "198.51.100.1"}, "198.51.100.1"},
		{"spoofed left entry never picks", httplimit.Client{TrustedProxies: proxies}, "10.0.0.2:1",
			map[string]string{"X-Forwarded-For": "1.2.3.4, 198.51.100.1"}, "198.51.100.1"},
		{"our proxies skipped from the right", httplimit.Client{TrustedProxies: proxies}, "10.0.0.2:1",
			map[string]string{"X-Forwarded-For": "1.2.3.4, 198.51.100.1, 10.0.0.9, 10.1.2.3"}, "198.51.100.1"},
		{"all hops ours: the leftmost", httplimit.Client{TrustedProxies: proxies}, "10.0.0.2:1",
			map[string]string{"X-Forwarded-For": "10.0.0.7, 10.0.0.8"}, "10.0.0.7"},
		{"no header from a proxy: the proxy", httplimit.Client{TrustedProxies: proxies}, "10.0.0.2:1", nil, "10.0.0.2"},
		{"garbage left of the client is never read", httplimit.Client{TrustedProxies: proxies}, "10.0.0.2:1",
			map[string]string{"X-Forwarded-For": "not-an-ip, 198.51.100.1"}, "198.51.100.1"},
		{"garbage from our own chain is an error", httplimit.Client{TrustedProxies: proxies}, "10.0.0.2:1",
			map[string]string{"X-Forwarded-For": "198.51.100.1, bogus"}, ""},
		{"Forwarded preferred, quoted ipv6 with port", httplimit.Client{TrustedProxies: proxies}, "[fd00::1]:1",
			map[string]string{"Forwarded": `for=1.2.3.4, for="[2001:db8:cafe::17]:4711";proto=https`, "X-Forwarded-For": "198.51.100.1"}, "2001:db8:cafe::/56"},
		{"Forwarded mixed families", httplimit.Client{TrustedProxies: proxies}, "10.0.0.2:1",
			map[string]string{"Forwarded": `for=192.0.2.60;by=10.0.0.1, for="[fd00::5]"`}, "192.0.2.60"},
		{"Forwarded element without for= is an error", httplimit.Client{TrustedProxies: proxies}, "10.0.0.2:1",
			map[string]string{"Forwarded": `proto=https`}, ""},
		{"Forwarded for=unknown from our chain is an error", httplimit.Client{TrustedProxies: proxies}, "10.0.0.2:1",
			map[string]string{"Forwarded": `for=unknown`}, ""},
		{"no remote address", httplimit.Client{}, "", nil, ""},
	}
	for _, tt := range tests {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = tt.remote
		for k, v := range tt.headers {
			req.Header.Set(k, v)
		}
		got, err := tt.client.Key("")(req)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("%s: got key %q, want an error", tt.name, got)
		case tt.want != "" && err != nil:
			t.Errorf("%s: got error %v, want key %q", tt.name, err, tt.want)
		case got != tt.want:
			t.Errorf("%s: got key %q, want %q", tt.name, got, tt.want)
		}
	}
}
