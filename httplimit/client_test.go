package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
	"github.com/ratelab/ratelab/httplimit"
)

var proxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}

// request builds a request from remote; hdr is name, value pairs, each
// added as a line of its own, in order.
func request(remote string, hdr ...string) *http.Request {
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = remote
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	return req
}

// Who the client is: IPv4 whole, IPv6 by its prefix, and without trusted
// proxies the connection alone, whatever headers the client sends.
func TestClientKey(t *testing.T) {
	tests := []struct {
		name   string
		client httplimit.Client
		remote string
		hdr    []string
		want   string // "" for an error
	}{
		{"ipv4 whole", httplimit.Client{}, "203.0.113.7:5555", nil, "203.0.113.7"},
		{"ipv4 without port", httplimit.Client{}, "203.0.113.7", nil, "203.0.113.7"},
		{"ipv4-mapped is ipv4", httplimit.Client{}, "[::ffff:203.0.113.7]:1", nil, "203.0.113.7"},
		{"ipv6 by /56", httplimit.Client{}, "[2001:db8:1234:5678::1]:443", nil, "2001:db8:1234:5600::/56"},
		{"ipv6 neighbour, same bucket", httplimit.Client{}, "[2001:db8:1234:56ff:ffff::9]:443", nil, "2001:db8:1234:5600::/56"},
		{"ipv6 by /64", httplimit.Client{IPv6Prefix: 64}, "[2001:db8:1234:5678::1]:443", nil, "2001:db8:1234:5678::/64"},
		{"ipv6 whole with /128", httplimit.Client{IPv6Prefix: 128}, "[2001:db8::1]:443", nil, "2001:db8::1/128"},
		{"ipv6 zone dropped", httplimit.Client{}, "[fe80::1%eth0]:443", nil, "fe80::/56"},
		{"no proxies: both headers ignored", httplimit.Client{}, "203.0.113.7:1",
			[]string{"X-Forwarded-For", "198.51.100.1", "Forwarded", "for=198.51.100.2"}, "203.0.113.7"},
		{"no proxies: a Header named is still not read", httplimit.Client{Header: "X-Forwarded-For"}, "203.0.113.7:1",
			[]string{"X-Forwarded-For", "198.51.100.1"}, "203.0.113.7"},
		{"no proxies: unparsable headers are no error", httplimit.Client{}, "203.0.113.7:1",
			[]string{"X-Forwarded-For", "bogus", "Forwarded", "for=unknown"}, "203.0.113.7"},
		{"trusted proxy: the client's /56", httplimit.Client{TrustedProxies: proxies, Header: "X-Forwarded-For"}, "10.0.0.2:1",
			[]string{"X-Forwarded-For", "6.6.6.6, 2001:db8:1234:5678::1"}, "2001:db8:1234:5600::/56"},
		{"no remote address", httplimit.Client{}, "", nil, ""},
	}
	for _, tt := range tests {
		got, err := tt.client.Key("")(request(tt.remote, tt.hdr...))
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

// Behind trusted proxies, for each header the proxies may write: only that
// header is read, from the right; what a client sends in it stays on the
// left of what the proxy appended, the other header is ignored whatever it
// holds, and a hop that is not an address is never an error — the client
// is then the proxy that appended it.
func TestClientBehindProxies(t *testing.T) {
	xff := httplimit.Client{TrustedProxies: proxies, Header: "X-Forwarded-For"}
	fwd := httplimit.Client{TrustedProxies: proxies, Header: "Forwarded"}
	const lb = "10.0.0.2:41000" // your load balancer
	tests := []struct {
		name   string
		client httplimit.Client
		remote string
		hdr    []string
		want   string
	}{
		{"xff: the rightmost hop", xff, lb, []string{"X-Forwarded-For", "198.51.100.1"}, "198.51.100.1"},
		{"xff: client-sent entries stay on the left", xff, lb, []string{"X-Forwarded-For", "1.2.3.4, 198.51.100.1"}, "198.51.100.1"},
		{"xff: client-sent Forwarded ignored", xff, lb,
			[]string{"Forwarded", "for=1.2.3.4", "X-Forwarded-For", "198.51.100.1"}, "198.51.100.1"},
		{"xff: client-sent Forwarded for=unknown ignored", xff, lb,
			[]string{"Forwarded", "for=unknown", "X-Forwarded-For", "198.51.100.1"}, "198.51.100.1"},
		{"xff: Forwarded alone is not read: the proxy", xff, lb, []string{"Forwarded", "for=1.2.3.4"}, "10.0.0.2"},
		{"xff: no header: the proxy", xff, lb, nil, "10.0.0.2"},
		{"xff: our proxies skipped from the right", xff, lb,
			[]string{"X-Forwarded-For", "1.2.3.4, 198.51.100.1, 10.0.0.9, fd00::7, 10.1.2.3"}, "198.51.100.1"},
		{"xff: all hops ours: the leftmost", xff, lb, []string{"X-Forwarded-For", "10.0.0.7, 10.0.0.8"}, "10.0.0.7"},
		{"xff: garbage on the left never read", xff, lb, []string{"X-Forwarded-For", "not-an-ip, , unknown, 198.51.100.1"}, "198.51.100.1"},
		{"xff: garbage from the proxy: the proxy", xff, lb, []string{"X-Forwarded-For", "198.51.100.1, bogus"}, "10.0.0.2"},
		{"xff: garbage behind a chain: the hop to its right", xff, lb,
			[]string{"X-Forwarded-For", "198.51.100.1, bogus, 10.0.0.9"}, "10.0.0.9"},
		{"xff: unknown: the proxy", xff, lb, []string{"X-Forwarded-For", "unknown"}, "10.0.0.2"},
		{"xff: _hidden: the proxy", xff, lb, []string{"X-Forwarded-For", "_hidden"}, "10.0.0.2"},
		{"xff: empty entry: the hop to its right", xff, lb, []string{"X-Forwarded-For", "198.51.100.1,, 10.0.0.9"}, "10.0.0.9"},
		{"xff: trailing comma: the proxy", xff, lb, []string{"X-Forwarded-For", "198.51.100.1, "}, "10.0.0.2"},
		{"xff: whitespace", xff, lb, []string{"X-Forwarded-For", " \t198.51.100.1 ,10.0.0.9\t"}, "198.51.100.1"},
		{"xff: lines: the proxy's is the last", xff, lb,
			[]string{"X-Forwarded-For", "1.2.3.4", "X-Forwarded-For", "198.51.100.1"}, "198.51.100.1"},
		{"xff: lines: a chain across them", xff, lb,
			[]string{"X-Forwarded-For", "6.6.6.6, 198.51.100.1", "X-Forwarded-For", "10.0.0.9"}, "198.51.100.1"},
		{"xff: lines: an empty last line: the proxy", xff, lb,
			[]string{"X-Forwarded-For", "198.51.100.1", "X-Forwarded-For", ""}, "10.0.0.2"},
		{"xff: ipv4 with port", xff, lb, []string{"X-Forwarded-For", "198.51.100.1:4711"}, "198.51.100.1"},
		{"xff: ipv6 bare", xff, lb, []string{"X-Forwarded-For", "2001:db8::1"}, "2001:db8::1"},
		{"xff: ipv6 bracketed with port", xff, lb, []string{"X-Forwarded-For", "[2001:db8::1]:4711"}, "2001:db8::1"},
		{"xff: ipv4-mapped unmapped, trusted too", xff, lb,
			[]string{"X-Forwarded-For", "::ffff:198.51.100.1, ::ffff:10.0.0.9"}, "198.51.100.1"},
		{"xff: zone stripped", xff, lb, []string{"X-Forwarded-For", "fe80::1%eth0"}, "fe80::1"},
		{"xff: proxy over ipv6", xff, "[fd00::1]:1", []string{"X-Forwarded-For", "198.51.100.1"}, "198.51.100.1"},
		{"xff: Header case-insensitive", httplimit.Client{TrustedProxies: proxies, Header: "x-forwarded-for"}, lb,
			[]string{"X-Forwarded-For", "198.51.100.1"}, "198.51.100.1"},
		{"xff: a client inside TrustedProxies is one of yours: its hops are read", xff, lb,
			[]string{"X-Forwarded-For", "1.2.3.4, 10.0.0.50"}, "1.2.3.4"},
		{"xff: untrusted peer: both headers ignored", xff, "203.0.113.7:1",
			[]string{"X-Forwarded-For", "198.51.100.1", "Forwarded", "for=198.51.100.2"}, "203.0.113.7"},

		{"fwd: the rightmost for=", fwd, lb, []string{"Forwarded", "for=198.51.100.1"}, "198.51.100.1"},
		{"fwd: client-sent elements stay on the left", fwd, lb, []string{"Forwarded", "for=1.2.3.4, for=198.51.100.1"}, "198.51.100.1"},
		{"fwd: client-sent X-Forwarded-For ignored", fwd, lb,
			[]string{"X-Forwarded-For", "1.2.3.4", "Forwarded", "for=198.51.100.1"}, "198.51.100.1"},
		{"fwd: client-sent X-Forwarded-For garbage ignored", fwd, lb,
			[]string{"X-Forwarded-For", "bogus", "Forwarded", "for=198.51.100.1"}, "198.51.100.1"},
		{"fwd: X-Forwarded-For alone is not read: the proxy", fwd, lb, []string{"X-Forwarded-For", "1.2.3.4"}, "10.0.0.2"},
		{"fwd: no header: the proxy", fwd, lb, nil, "10.0.0.2"},
		{"fwd: quoted ipv6 with port", fwd, lb,
			[]string{"Forwarded", `for=1.2.3.4, for="[2001:db8:cafe::17]:4711";proto=https`}, "2001:db8:cafe::17"},
		{"fwd: quoted ipv4 with port", fwd, lb, []string{"Forwarded", `for="198.51.100.1:8080"`}, "198.51.100.1"},
		{"fwd: other parameters, For in any case, whitespace", fwd, lb,
			[]string{"Forwarded", ` proto=https ; FOR=198.51.100.1 ;by=10.0.0.1 `}, "198.51.100.1"},
		{"fwd: mixed families, ours skipped", fwd, lb,
			[]string{"Forwarded", `for=192.0.2.60;by=10.0.0.1, for="[fd00::5]"`}, "192.0.2.60"},
		{"fwd: all hops ours: the leftmost", fwd, lb, []string{"Forwarded", `for=10.0.0.7, for="[fd00::9]"`}, "10.0.0.7"},
		{"fwd: for=unknown from the proxy: the proxy", fwd, lb, []string{"Forwarded", "for=198.51.100.1, for=unknown"}, "10.0.0.2"},
		{"fwd: for=_hidden behind a chain: the hop to its right", fwd, lb,
			[]string{"Forwarded", "for=198.51.100.1, for=_hidden, for=10.0.0.9"}, "10.0.0.9"},
		{"fwd: an element without for=: the proxy", fwd, lb, []string{"Forwarded", "for=198.51.100.1, proto=https"}, "10.0.0.2"},
		{"fwd: an empty element: the hop to its right", fwd, lb,
			[]string{"Forwarded", "for=198.51.100.1,, for=10.0.0.9"}, "10.0.0.9"},
		{"fwd: empty for=: the proxy", fwd, lb, []string{"Forwarded", "for=198.51.100.1, for="}, "10.0.0.2"},
		{"fwd: garbage: the proxy", fwd, lb, []string{"Forwarded", "for=198.51.100.1, ☃"}, "10.0.0.2"},
		{"fwd: two for= in one element: the proxy", fwd, lb, []string{"Forwarded", "for=198.51.100.1;for=1.2.3.4"}, "10.0.0.2"},
		{"fwd: unknown and garbage on the left never read", fwd, lb,
			[]string{"Forwarded", `for=unknown, for=_x;;, "junk, for=198.51.100.1`}, "198.51.100.1"},
		{"fwd: a client's open quote cannot swallow what the proxy appended", fwd, lb,
			[]string{"Forwarded", `for="1.2.3.4, for=198.51.100.1`}, "198.51.100.1"},
		{"fwd: lines: the proxy's is the last", fwd, lb,
			[]string{"Forwarded", "for=1.2.3.4", "Forwarded", "for=198.51.100.1"}, "198.51.100.1"},
		{"fwd: lines: a chain across them", fwd, lb,
			[]string{"Forwarded", "for=6.6.6.6, for=198.51.100.1", "Forwarded", "for=10.0.0.9;proto=https"}, "198.51.100.1"},
		{"fwd: ipv4-mapped unmapped", fwd, lb, []string{"Forwarded", `for="[::ffff:198.51.100.1]"`}, "198.51.100.1"},
		{"fwd: Header case-insensitive", httplimit.Client{TrustedProxies: proxies, Header: "FORWARDED"}, lb,
			[]string{"Forwarded", "for=198.51.100.1"}, "198.51.100.1"},
		{"fwd: untrusted peer: both headers ignored", fwd, "203.0.113.7:1",
			[]string{"X-Forwarded-For", "198.51.100.1", "Forwarded", "for=198.51.100.2"}, "203.0.113.7"},
	}
	for _, tt := range tests {
		got, err := tt.client.Addr(request(tt.remote, tt.hdr...))
		if err != nil {
			t.Errorf("%s: got error %v, want %s", tt.name, err, tt.want)
			continue
		}
		if got.String() != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

// A configuration that cannot be right is reported by Check at start, and
// by Addr for every request: never a silent guess at the header.
func TestClientCheck(t *testing.T) {
	tests := []struct {
		name   string
		client httplimit.Client
		want   string // a part of the error; "" for none
	}{
		{"zero value", httplimit.Client{}, ""},
		{"IPv6Prefix 1", httplimit.Client{IPv6Prefix: 1}, ""},
		{"IPv6Prefix 128", httplimit.Client{IPv6Prefix: 128}, ""},
		{"IPv6Prefix negative", httplimit.Client{IPv6Prefix: -1}, "IPv6Prefix -1"},
		{"IPv6Prefix 129", httplimit.Client{IPv6Prefix: 129}, "IPv6Prefix 129"},
		{"X-Forwarded-For", httplimit.Client{TrustedProxies: proxies, Header: "X-Forwarded-For"}, ""},
		{"forwarded, any case", httplimit.Client{TrustedProxies: proxies, Header: "forwarded"}, ""},
		{"proxies without Header", httplimit.Client{TrustedProxies: proxies}, "Header"},
		{"an unknown Header", httplimit.Client{TrustedProxies: proxies, Header: "X-Real-IP"}, `"X-Real-IP"`},
		{"an unknown Header without proxies", httplimit.Client{Header: "X-Real-IP"}, `"X-Real-IP"`},
		{"a Header without proxies", httplimit.Client{Header: "Forwarded"}, ""},
		{"an invalid prefix", httplimit.Client{TrustedProxies: []netip.Prefix{{}}, Header: "Forwarded"}, "invalid"},
		{"an IPv4-mapped prefix", httplimit.Client{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")},
			Header: "Forwarded"}, "IPv4-mapped"},
		{"every IPv4 address", httplimit.Client{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")},
			Header: "X-Forwarded-For"}, "every address"},
		{"every IPv6 address", httplimit.Client{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("::/0")},
			Header: "X-Forwarded-For"}, "every address"},
		{"every IPv4 address, in two halves", httplimit.Client{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("1.0.0.0/1"),
			netip.MustParsePrefix("128.0.0.0/1")}, Header: "X-Forwarded-For"}, "more addresses than any proxy fleet"},
		{"every IPv4 address, in 256 /8s", httplimit.Client{TrustedProxies: every8(), Header: "X-Forwarded-For"}, "more addresses than any proxy fleet"},
		{"all global IPv6 unicast", httplimit.Client{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("2000::/3")},
			Header: "X-Forwarded-For"}, "more addresses than any proxy fleet"},
		{"every private IPv4 network, nested and repeated ones, and the ULA /7", httplimit.Client{TrustedProxies: []netip.Prefix{
			netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16"),
			netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fc00::/7")},
			Header: "X-Forwarded-For"}, ""},
	}
	for _, tt := range tests {
		err := tt.client.Check()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: got error %v, want none", tt.name, err)
		case tt.want != "" && err == nil:
			t.Errorf("%s: got no error, want one containing %q", tt.name, tt.want)
		case tt.want != "" && !strings.Contains(err.Error(), tt.want):
			t.Errorf("%s: got error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func TestClientAddrRefusesAMissingHeader(t *testing.T) {
	for _, c := range []httplimit.Client{{TrustedProxies: proxies}, {TrustedProxies: proxies, Header: "X-Real-IP"}} {
		for _, remote := range []string{"10.0.0.2:1", "203.0.113.7:1"} {
			_, err := c.Addr(request(remote, "X-Forwarded-For", "198.51.100.1", "Forwarded", "for=198.51.100.2"))
			assert.ErrorContains(t, err, "Header", "Header %q, remote %s", c.Header, remote)
			_, err = c.Key("ip:")(request(remote))
			assert.ErrorContains(t, err, "Header", "Header %q, remote %s", c.Header, remote)
		}
	}
}

func TestParseTrustedProxies(t *testing.T) {
	tests := []struct {
		in   string
		want string // the prefixes joined by spaces, or "error: " and a part of the error
	}{
		{"", ""},
		{"  ", ""},
		{"10.0.0.0/8", "10.0.0.0/8"},
		{"10.0.0.0/8, 192.168.1.7 ,fd00::/8,2001:db8::1", "10.0.0.0/8 192.168.1.7/32 fd00::/8 2001:db8::1/128"},
		{"10.1.2.3/8", "10.0.0.0/8"},
		{"127.0.0.1", "127.0.0.1/32"},
		{"10.0.0.0/33", `error: "10.0.0.0/33"`},
		{"10.0.0.0/8, proxy.example", `error: "proxy.example"`},
		{"10.0.0.0/8, 300.1.1.1", `error: "300.1.1.1"`},
		{"10.0.0.0/8,,1.2.3.4", `error: ""`},
		{"10.0.0.0/8,", `error: ""`},
		{"::ffff:10.0.0.1", `error: "::ffff:10.0.0.1"`},
		{"::ffff:10.0.0.0/104", `error: "::ffff:10.0.0.0/104"`},
	}
	for _, tt := range tests {
		ps, err := httplimit.ParseTrustedProxies(tt.in)
		if err != nil {
			if got := "error: " + err.Error(); !strings.HasPrefix(tt.want, "error: ") || !strings.Contains(got, tt.want[len("error: "):]) {
				t.Errorf("ParseTrustedProxies(%q): got %s, want %s", tt.in, got, tt.want)
			}
			continue
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.String())
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("ParseTrustedProxies(%q): got %q, want %q", tt.in, strings.Join(got, " "), tt.want)
		}
		if tt.in != "" && tt.in != "  " {
			require.NoError(t, httplimit.Client{TrustedProxies: ps, Header: "Forwarded"}.Check(), "ParseTrustedProxies(%q)", tt.in)
		} else if ps != nil {
			t.Errorf("ParseTrustedProxies(%q): got %v, want nil", tt.in, ps)
		}
	}
}

// End to end, as the adversarial tester found it: behind a proxy at
// 127.0.0.1 that appends to X-Forwarded-For and passes Forwarded through,
// a client that sends a new Forwarded each time stays in its one bucket;
// and with Header Forwarded, for=unknown is keyed on the proxy, not a 500.
func TestMiddlewareBehindAProxyIgnoresTheOtherHeader(t *testing.T) {
	local, err := httplimit.ParseTrustedProxies("127.0.0.1")
	require.NoError(t, err)
	serve := func(c httplimit.Client) http.Handler {
		require.NoError(t, c.Check())
		l, err := ratelab.NewLimiter(new(brokeninmemory.Store), ratelab.Rule{Name: "r", Limit: 3, Window: time.Hour})
		require.NoError(t, err)
		mw := &httplimit.Middleware{Limiter: l, Key: c.Key("ip:"), Now: func() time.Time { return t0 }, Logger: newDiscardLogger()}
		return mw.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	}

	h := serve(httplimit.Client{TrustedProxies: local, Header: "X-Forwarded-For"})
	var codes []int
	for i := range 4 {
		codes = append(codes, get(h, fmt.Sprintf("127.0.0.1:%d", 40000+i),
			"X-Forwarded-For", "203.0.113.9", "Forwarded", fmt.Sprintf("for=198.51.100.%d", i)).Code)
	}
	assert.Equal(t, []int{200, 200, 200, 429}, codes, "a new Forwarded each request must not pick a new bucket")
	assert.Equal(t, 200, get(h, "127.0.0.1:1", "X-Forwarded-For", "203.0.113.10").Code, "another client has its own bucket")

	h = serve(httplimit.Client{TrustedProxies: local, Header: "Forwarded"})
	codes = nil
	for _, hop := range []string{"for=unknown", `for="_hidden"`, "proto=https", "for=unknown"} {
		codes = append(codes, get(h, "127.0.0.1:1", "Forwarded", hop).Code)
	}
	assert.Equal(t, []int{200, 200, 200, 429}, codes, "an unparsable hop is the proxy's, never a 500")
}

// every8 is every IPv4 address as 256 networks of /8.
func every8() []netip.Prefix {
	var ps []netip.Prefix
	for i := range 256 {
		ps = append(ps, netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(i)}), 8))
	}
	return ps
}
