package httplimit

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
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
// keys on the connection's address and a /56 for IPv6.
type Client struct {
	// IPv6Prefix is how many leading bits of an IPv6 address make one
	// client, 1 to 128; 0 means DefaultIPv6Prefix.
	IPv6Prefix int
	// TrustedProxies are the networks of the proxies you run in front of
	// the application. Empty, the connection's address is the client and
	// no header is read: any client can send X-Forwarded-For. Otherwise,
	// for a connection from inside TrustedProxies, the hops of the
	// Forwarded header (RFC 7239), or of X-Forwarded-For when there is no
	// Forwarded, are read from the right — each proxy appends the address
	// it was connected from — skipping the addresses of your own proxies;
	// the first one that is not yours is the client. A client that sends
	// either header itself only adds hops on the left, which are never
	// reached.
	TrustedProxies []netip.Prefix
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

// Addr returns the client's address, IPv4-mapped IPv6 addresses unmapped.
func (c Client) Addr(r *http.Request) (netip.Addr, error) {
	peer, err := parseHost(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("httplimit: request has no usable remote address %q", r.RemoteAddr)
	}
	if !c.trusted(peer) {
		return peer, nil
	}
	hops, err := forwardedHops(r.Header)
	if err != nil {
		return netip.Addr{}, err
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		addr, err := parseHost(hops[i])
		if err != nil {
			return netip.Addr{}, fmt.Errorf("httplimit: a trusted proxy passed the hop %q, which is not an address", hops[i])
		}
		client = addr
		if !c.trusted(addr) {
			break
		}
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

// forwardedHops returns the for= hops of every Forwarded header, left to
// right, or the X-Forwarded-For entries if there is no Forwarded header.
func forwardedHops(h http.Header) ([]string, error) {
	var hops []string
	if fwd := h.Values("Forwarded"); len(fwd) > 0 {
		for _, line := range fwd {
			for _, elem := range strings.Split(line, ",") {
				found := false
				for _, pair := range strings.Split(elem, ";") {
					k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
					if ok && strings.EqualFold(k, "for") {
						hops, found = append(hops, strings.Trim(v, `"`)), true
					}
				}
				if !found {
					return nil, errors.New("httplimit: a Forwarded element has no for=")
				}
			}
		}
		return hops, nil
	}
	for _, line := range h.Values("X-Forwarded-For") {
		for _, hop := range strings.Split(line, ",") {
			hops = append(hops, strings.TrimSpace(hop))
		}
	}
	return hops, nil
}

// parseHost parses an address with or without a port, IPv6 in brackets or
// not, as RemoteAddr, X-Forwarded-For and Forwarded write it.
func parseHost(s string) (netip.Addr, error) {
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	addr, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.Addr{}, err
	}
	return addr.Unmap().WithZone(""), nil
}
