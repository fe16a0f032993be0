package httphost

import (
	"context"
	"net/http"
)

// RequestHeader is the header a client may name its request by; the
// endpoint passes the name to its store's context, where a store wrapper
// reads it (RequestName): the recorder of package linearizability ties
// each hit to the request a client sent.
const RequestHeader = "X-Ratelab-Request"

type requestKey struct{}

// RequestName is the name the request being served was sent with
// (RequestHeader), or "".
func RequestName(ctx context.Context) string {
	s, _ := ctx.Value(requestKey{}).(string)
	return s
}

// withRequestName puts the request's RequestHeader into its context.
func withRequestName(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name := r.Header.Get(RequestHeader); name != "" {
			r = r.WithContext(context.WithValue(r.Context(), requestKey{}, name))
		}
		h.ServeHTTP(w, r)
	})
}
