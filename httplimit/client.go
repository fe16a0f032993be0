package httplimit

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// DefaultIPv6Prefix is how many leading bits of an IPv6 address Client
// takes as one client by default. An ISP hands a customer a whole network
// — a /64 at the least, often a /56 or a /48 — so keying on the full
// address gives one customer 2^64 buckets or more, and the limit never
// applies to them. A /56 takes a typical home allocation as one client:
// express-rate-limit made it its default
// (https://classic.yarnpkg.com/en/package/express-rate-limit, option
// ipv6Subnet); GitLab keys on a /64
// (https://gitlab.com/gitlab-org/gitlab/-/merge_requests/268782). Set a
// longer prefix where many unrelated clients share a /56, a shorter one to
// be stricter.
const DefaultIPv6Prefix = 56

// Client identifies the client behind a request by its address: an IPv4
// address whole, an IPv6 address by its network prefix. The zero value
// keys on the connection's address and a /56 for IPv6, and reads no
// header. Run Check once at start: Addr refuses a Client whose Header is
// wrong for its TrustedProxies.
type Client struct {
	// IPv6Prefix is how many leading bits of an IPv6 address make one
	// client, 1 to 128; 0 means DefaultIPv6Prefix. Check reports any
	// other value, which Bucket takes as DefaultIPv6Prefix.
	IPv6Prefix int
	// TrustedProxies are the networks of the proxies you run in front of
	// the application. Empty, the connection's address is the client and
	// no header is read: any client can send one. A connection from
	// outside TrustedProxies is the client too, its headers unread.
	// For a connection from inside, the hops of Header are read from the
	// right — each proxy appends the address it was connected from —
	// skipping the addresses of your own proxies; the first one that is
	// not yours is the client. A client outside TrustedProxies that sends
	// Header itself only adds hops on the left of the address your first
	// proxy appended for it; the walk stops at that address, so they are
	// never reached. (A client inside TrustedProxies is one of yours, and
	// its hops are read.) The other header is never read, whatever a
	// client puts in it. A hop that
	// is not an address — for=unknown, an obfuscated for=_name, garbage,
	// an empty entry, a Forwarded element without one for= — is no error:
	// it ends the walk, and the client is the proxy that appended it, the
	// nearest of your addresses to its right.
	TrustedProxies []netip.Prefix
	// Header names the one header your trusted proxies append to:
	// "X-Forwarded-For" (nginx, HAProxy, lighttpd, most load balancers)
	// or "Forwarded" (RFC 7239), in any case. It is required with
	// TrustedProxies — empty, Check and Addr report the configuration
	// error rather than guess — and unread without them; any other name
	// is an error either way. A proxy that passes on a header it does not
	// write lets any client fill it, so name only the one yours write.
	//
	// Under CGI a header reaches the program as HTTP_ and its name with
	// '-' turned into '_': a client's X_Forwarded_For and the proxy's
	// X-Forwarded-For become one variable, and the web server decides
	// which one the program sees. Apache httpd 2.4 and nginx drop header
	// names that hold '_', and so does ratelab serve's CGI host; where the
	// web server does not (lighttpd 1.4.69 passes them), name Forwarded,
	// which has no '-' to collide with, or have the proxy drop them.
	Header string
}

// The headers Client.Header may name, canonical.
const (
	xForwardedFor = "X-Forwarded-For"
	forwarded     = "Forwarded"
)

// Check reports a Client that cannot be right: IPv6Prefix out of range, an
// invalid or IPv4-mapped trusted network, TrustedProxies without a Header,
// or a Header other than X-Forwarded-For or Forwarded. Run it at start.
func (c Client) Check() error {
	if c.IPv6Prefix < 0 || c.IPv6Prefix > 128 {
		return fmt.Errorf("httplimit: IPv6Prefix %d is out of range: 1 to 128, or 0 for %d", c.IPv6Prefix, DefaultIPv6Prefix)
	}
	for _, p := range c.TrustedProxies {
		if err := checkProxy(p); err != nil {
			return fmt.Errorf("httplimit: trusted proxy %s: %w", p, err)
		}
	}
	if err := checkCoverage(c.TrustedProxies); err != nil {
		return fmt.Errorf("httplimit: trusted proxies: %w", err)
	}
	_, err := c.header()
	return err
}

// header returns the canonical name of the header to read, "" when none
// is read.
func (c Client) header() (string, error) {
	switch {
	case strings.EqualFold(c.Header, xForwardedFor):
		return xForwardedFor, nil
	case strings.EqualFold(c.Header, forwarded):
		return forwarded, nil
	case c.Header != "":
		return "", fmt.Errorf("httplimit: Client.Header %q is neither X-Forwarded-For nor Forwarded", c.Header)
	case len(c.TrustedProxies) > 0:
		return "", errors.New("httplimit: Client has TrustedProxies but no Header: name the one your proxies append to, X-Forwarded-For or Forwarded")
	}
	return "", nil
}

// checkProxy says why p cannot be a trusted network, if it cannot.
func checkProxy(p netip.Prefix) error {
	switch {
	case !p.IsValid():
		return errors.New("not a valid network")
	case p.Addr().Is4In6():
		return errors.New("IPv4-mapped, which never matches: addresses are unmapped before they are compared, write it as IPv4")
	case p.Bits() == 0:
		return errors.New("every address: every client would be a proxy, and pick its own bucket")
	}
	return nil
}

// The most addresses the trusted networks may cover together, each
// counted once: all three private IPv4 networks (10/8, 172.16/12,
// 192.168/16, about 2^24.1 addresses) fit under 2^25, and the unique local
// fc00::/7 under 2^122; more reaches the internet — every IPv4 address,
// however it is split, or 2000::/3 — and most clients would be proxies,
// picking their own buckets.
const maxTrusted4, maxTrusted6 = 1 << 25, 0x1p122

// checkCoverage says why the networks ps cannot be trusted together, if
// they cannot: they cover more addresses than any proxy fleet holds. A
// network inside another listed one, or listed twice, is counted once.
func checkCoverage(ps []netip.Prefix) error {
	var n4, n6 float64
	for i, p := range ps {
		p = p.Masked()
		if slices.ContainsFunc(ps[:i], func(q netip.Prefix) bool { return q.Masked() == p }) ||
			slices.ContainsFunc(ps, func(q netip.Prefix) bool { return q.Bits() < p.Bits() && q.Contains(p.Addr()) }) {
			continue
		}
		size := math.Ldexp(1, p.Addr().BitLen()-p.Bits())
		if p.Addr().Is4() {
			n4 += size
		} else {
			n6 += size
		}
	}
	if n4 > maxTrusted4 || n6 > maxTrusted6 {
		return errors.New("the networks cover more addresses than any proxy fleet holds (2^25 IPv4, 2^122 IPv6): most clients would be proxies, and pick their own buckets")
	}
	return nil
}

// ParseTrustedProxies parses a comma-separated list of networks in CIDR
// notation or bare addresses, each a network of one address, for
// Client.TrustedProxies: "10.0.0.0/8, 192.0.2.7, fd00::/8". Host bits are
// masked off; an empty or blank s is nil. An entry that is neither — an
// empty one included — is an error that names it.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var ps []netip.Prefix
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		p, err := netip.ParsePrefix(entry)
		if !strings.Contains(entry, "/") {
			var addr netip.Addr
			addr, err = netip.ParseAddr(entry)
			p = netip.PrefixFrom(addr, addr.BitLen())
		}
		if err != nil {
			return nil, fmt.Errorf("httplimit: trusted proxy %q is neither a CIDR network nor an address: %w", entry, err)
		}
		if err := checkProxy(p); err != nil {
			return nil, fmt.Errorf("httplimit: trusted proxy %q: %w", entry, err)
		}
		ps = append(ps, p.Masked())
	}
	if err := checkCoverage(ps); err != nil {
		return nil, fmt.Errorf("httplimit: trusted proxies %q: %w", s, err)
	}
	return ps, nil
}

// Key returns a KeyFunc that keys requests on the client, after prefix.
func (c Client) Key(prefix string) KeyFunc {
	return func(r *http.Request) (string, error) {
		addr, err := c.Addr(r)
		if err != nil {
			return "", err
		}
		return prefix + c.Bucket(addr), nil
	}
}

// Bucket names the client of addr: the address for IPv4, the masked
// network for IPv6.
func (c Client) Bucket(addr netip.Addr) string {
	if addr.Is4() {
		return addr.String()
	}
	bits := c.IPv6Prefix
	if bits <= 0 || bits > 128 {
		bits = DefaultIPv6Prefix
	}
	p, _ := addr.Prefix(bits)
	return p.String()
}

// Addr returns the client's address, as TrustedProxies tells, IPv4-mapped
// IPv6 addresses unmapped and zones dropped. Its errors are a request
// without a usable RemoteAddr and a Header that Check reports; a hop is
// never one.
func (c Client) Addr(r *http.Request) (netip.Addr, error) {
	header, err := c.header()
	if err != nil {
		return netip.Addr{}, err
	}
	peer, err := parseHost(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("httplimit: request has no usable remote address %q", r.RemoteAddr)
	}
	if !c.trusted(peer) {
		return peer, nil
	}
	client := peer // the nearest trusted address: the proxy that appended the next hop
	for hop := range hopsFromRight(r.Header, header) {
		if header == forwarded {
			hop = forwardedFor(hop)
		}
		addr, err := parseHost(hop)
		if err != nil {
			break // not an address: the client is the proxy that appended it
		}
		if !c.trusted(addr) {
			return addr, nil
		}
		client = addr
	}
	return client, nil
}

func (c Client) trusted(addr netip.Addr) bool {
	for _, p := range c.TrustedProxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// hopsFromRight yields the comma-separated entries of every line of the
// header name, right to left: the last line first, as a proxy that adds
// a line of its own puts it last. Splitting on every comma, quoted or
// not, is what keeps a client's hops on the left: no value a proxy
// writes holds a comma, so nothing a client sends — an open quote
// included — can run into what the proxy appended.
func hopsFromRight(h http.Header, name string) iter.Seq[string] {
	return func(yield func(string) bool) {
		lines := h.Values(name)
		for i := len(lines) - 1; i >= 0; i-- {
			line := lines[i]
			for {
				j := strings.LastIndexByte(line, ',')
				if !yield(strings.TrimSpace(line[j+1:])) {
					return
				}
				if j < 0 {
					break
				}
				line = line[:j]
			}
		}
	}
}

// forwardedFor returns the node of a Forwarded element's one for=
// parameter, unquoted, or "" — which is no address — if it has none, more
// than one, or a broken quote.
func forwardedFor(elem string) string {
	node, found := "", 0
	for pair := range strings.SplitSeq(elem, ";") {
		k, v, ok := strings.Cut(pair, "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "for") {
			node, found = strings.TrimSpace(v), found+1
		}
	}
	if found != 1 {
		return ""
	}
	if strings.HasPrefix(node, `"`) {
		unquoted, ok := strings.CutSuffix(node[1:], `"`)
		if !ok {
			return ""
		}
		node = unquoted
	}
	return node
}

// parseHost parses an address with or without a port, IPv6 in brackets or
// not, as RemoteAddr, X-Forwarded-For and Forwarded write it; IPv4-mapped
// addresses are unmapped and zones dropped.
func parseHost(s string) (netip.Addr, error) {
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	} else if inner, ok := strings.CutPrefix(s, "["); ok {
		s, _ = strings.CutSuffix(inner, "]")
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, err
	}
	return addr.Unmap().WithZone(""), nil
}
