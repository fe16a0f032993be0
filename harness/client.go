package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

// Workload is what the client sends: Requests requests from one address,
// one by one when Concurrency is 1, otherwise as a burst with at most
// Concurrency in flight.
type Workload struct {
	Requests    int
	Concurrency int
}

func (w Workload) validate() error {
	if w.Requests <= 0 {
		return fmt.Errorf("harness: requests %d must be positive", w.Requests)
	}
	if w.Concurrency <= 0 {
		return fmt.Errorf("harness: concurrency %d must be positive", w.Concurrency)
	}
	return nil
}

// Burst reports whether requests are sent concurrently.
func (w Workload) Burst() bool { return w.Concurrency > 1 }

// Response is what came back for one request.
type Response struct {
	Status     int
	RetryAfter int // seconds; only for 429
	Pid        int // the process that answered
}

// Send sends the workload to url with a real HTTP client over loopback.
// Answers are indexed by request number − 1. Any answer other than 200 or
// a well-formed 429 is an error: a crashed child, a proxy that could not
// reach a worker, a 503 from a store that could not decide.
func Send(ctx context.Context, url string, w Workload) ([]Response, error) {
	if err := w.validate(); err != nil {
		return nil, err
	}
	tr := &http.Transport{MaxIdleConnsPerHost: w.Concurrency}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	out := make([]Response, w.Requests)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(w.Concurrency)
	for i := range out {
		g.Go(func() error {
			r, err := sendOne(ctx, client, url)
			if err != nil {
				return fmt.Errorf("harness: request #%d: %w", i+1, err)
			}
			out[i] = r
			return nil
		})
	}
	return out, g.Wait()
}

func sendOne(ctx context.Context, client *http.Client, url string) (Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return Response{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	r := Response{Status: resp.StatusCode}
	r.Pid, _ = strconv.Atoi(resp.Header.Get("X-Ratelab-Pid"))
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusTooManyRequests:
		r.RetryAfter, err = strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || r.RetryAfter < 0 {
			return r, fmt.Errorf("429 with a bad Retry-After %q", resp.Header.Get("Retry-After"))
		}
		if resp.Header.Get("RateLimit") == "" || resp.Header.Get("RateLimit-Policy") == "" {
			return r, fmt.Errorf("429 without RateLimit fields")
		}
	default:
		return r, fmt.Errorf("unexpected %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if r.Pid == 0 {
		return r, fmt.Errorf("%s without X-Ratelab-Pid: not answered by a ratelab child", resp.Status)
	}
	return r, nil
}
