package httphost

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
		return fmt.Errorf("httphost: requests %d must be positive", w.Requests)
	}
	if w.Concurrency <= 0 {
		return fmt.Errorf("httphost: concurrency %d must be positive", w.Concurrency)
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
// reach a worker, a 503 from a store that could not decide — once a
// request has been answered 503 busyTries times. A 503 is an answer
// without a decision, the hit not counted: on a busy machine a fail-closed
// store that could not count a hit in time answers it (load is not an
// outage), and a client asks again, as any client would; an outage
// answers 503 every time.
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
				return fmt.Errorf("httphost: request #%d: %w", i+1, err)
			}
			out[i] = r
			return nil
		})
	}
	return out, g.Wait()
}

// busyTries is how many times Send sends a request answered 503, and
// busyWait the wait before the second try, doubled before each next one
// unless the 503 carries a Retry-After.
const (
	busyTries = 4
	busyWait  = 250 * time.Millisecond
)

// sendOne sends one request until it is answered other than 503, or
// busyTries times.
func sendOne(ctx context.Context, client *http.Client, url string) (Response, error) {
	wait := busyWait
	for try := 1; ; try++ {
		r, retryAfter, err := sendOnce(ctx, client, url)
		if r.Status != http.StatusServiceUnavailable || try == busyTries {
			if err != nil && r.Status == http.StatusServiceUnavailable {
				err = fmt.Errorf("%w (%d tries)", err, try)
			}
			return r, err
		}
		if retryAfter >= 0 {
			wait = time.Duration(retryAfter) * time.Second
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// sendOnce sends one request and reads its answer, with the seconds of a
// 503's Retry-After (-1 if none).
func sendOnce(ctx context.Context, client *http.Client, url string) (Response, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return Response{}, -1, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return Response{}, -1, err
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
			return r, -1, fmt.Errorf("429 with a bad Retry-After %q", resp.Header.Get("Retry-After"))
		}
		if resp.Header.Get("RateLimit") == "" || resp.Header.Get("RateLimit-Policy") == "" {
			return r, -1, fmt.Errorf("429 without RateLimit fields")
		}
	default:
		retryAfter, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || retryAfter < 0 {
			retryAfter = -1
		}
		return r, retryAfter, fmt.Errorf("unexpected %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if r.Pid == 0 {
		return r, -1, fmt.Errorf("%s without X-Ratelab-Pid: not answered by a ratelab child", resp.Status)
	}
	return r, -1, nil
}
