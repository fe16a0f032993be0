package httphost_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	httphost "github.com/ratelab/ratelab/http_host"
)

// A 503 is an answer without a decision — on a busy machine, a store that
// could not count the hit in time — so the client asks again; a 503 that
// lasts is an error that says how often it asked.
func TestSendAsksAgainAfterA503(t *testing.T) {
	tests := []struct {
		name      string
		busy      int32 // the first busy requests are answered 503
		wantTries int32
		wantErr   string
	}{
		{"answered at once", 0, 1, ""},
		{"busy twice, then answered", 2, 3, ""},
		{"busy every time", 100, 4, "unexpected 503 Service Unavailable: rate limiter unavailable, try again later (4 tries)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tries atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tries.Add(1) <= tt.busy {
					w.Header().Set("Retry-After", "0") // no wait in a test
					http.Error(w, "rate limiter unavailable, try again later", http.StatusServiceUnavailable)
					return
				}
				w.Header().Set("X-Ratelab-Pid", "42")
			}))
			defer srv.Close()
			resps, err := httphost.Send(context.Background(), srv.URL, httphost.Workload{Requests: 1, Concurrency: 1})
			assert.Equal(t, tt.wantTries, tries.Load(), "tries")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, httphost.Response{Status: 200, Pid: 42}, resps[0])
		})
	}
}
