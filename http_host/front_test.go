package httphost_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/httplimit"
)

// A worker keys a request its front vouched for on the client exactly as
// the front passed it — an IPv6 client's network included — and parses
// nothing; a request without the token is keyed on its own connection.
func TestWorkerKeysOnTheClientItsFrontPassed(t *testing.T) {
	const token = "s3cret"
	key := httphost.FrontKey(token, httplimit.Client{})
	for _, tc := range []struct {
		name, remote, token, client string
		want                        string // "" wants an error
	}{
		{"an IPv4 client", "127.0.0.1:5000", token, "203.0.113.9", "ip:203.0.113.9"},
		{"an IPv6 client's network", "127.0.0.1:5000", token, "2001:db8:0:100::/56", "ip:2001:db8:0:100::/56"},
		{"the front passed no client", "127.0.0.1:5000", token, "", ""},
		{"a client guessing the token", "198.51.100.7:5000", "guess", "203.0.113.9", "ip:198.51.100.7"},
		{"no token, an IPv6 connection", "[2001:db8::1]:5000", "", "203.0.113.9", "ip:2001:db8::/56"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/demo", nil)
			r.RemoteAddr = tc.remote
			r.Header.Set(httphost.HeaderFrontToken, tc.token)
			r.Header.Set(httphost.HeaderClient, tc.client)
			got, err := key(r)
			if tc.want == "" {
				assert.Error(t, err, "got key %q", got)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
