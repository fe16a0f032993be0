package linearizability

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"strconv"
	"strings"

	"github.com/ratelab/ratelab"
	httphost "github.com/ratelab/ratelab/http_host"
)

// Every process of a harness run whose App.Wrap is wrapName plus ":" and
// the argument historyArg makes puts its store inside a Recorder.
const wrapName = "history"

func init() {
	httphost.RegisterWrap(wrapName, func(arg string, s ratelab.Store) (ratelab.Store, error) {
		f := strings.SplitN(arg, ":", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("linearizability: wrapper argument %q: want FAULTS:SPEED:DIR", arg)
		}
		faults, err := strconv.Atoi(f[0])
		speed, serr := strconv.ParseInt(f[1], 10, 64)
		if err != nil || serr != nil || speed < 0 || speed > MaxSpeed {
			return nil, fmt.Errorf("linearizability: wrapper argument %q: want FAULTS:SPEED:DIR", arg)
		}
		rec, err := NewRecorder(f[2], faults)
		if err != nil {
			return nil, err
		}
		rec.speed = speed
		return rec.Store(s), nil // its file is closed when the process ends
	})
}

// Recording is a run of the harness whose every hit was recorded:
// Clients clients, each sending Hits requests one after
// another, all of them at once.
type Recording struct {
	Clients, Hits int
	// Kills is how many processes kill themselves with SIGKILL in the
	// middle of a hit (PlantKills); their clients get an
	// error, and the run goes on.
	Kills int
	// Stops is how many processes stop themselves with SIGSTOP in the
	// middle of a hit (PlantStops), each continued once
	// the others have answered stopReturns more hits, or after stopHold.
	Stops int
	// Speed, if not 0, gives every store the history's own clock instead
	// of the instant its process read: each hit's instant is its call's
	// CLOCK_MONOTONIC stamp run Speed times as fast (HistoryClock), so
	// that a window of a second passes in 1/Speed of one.
	Speed int64
	// Gap, if not 0, paces each client: its n-th request (from 0) is sent
	// no sooner than n × Gap after the load starts.
	Gap time.Duration
}

// How long a stopped process stays stopped: until the other processes
// have answered stopReturns hits since, or for stopHold if they cannot
// (one process serves them all, or all wait for its lock).
const (
	stopReturns = 8
	stopHold    = 300 * time.Millisecond
)

// Answers counts what the clients got back.
type Answers struct{ OK, Throttled, Failed int }

// RecordModel runs cfg's model with every process recording its hits in
// a directory of its own under tmp, sends rec's load, stops the model and
// returns the history. A request that gets neither 200 nor 429, or a
// model that does not stop cleanly, is an error unless processes were
// told to die; so is a stop token no process took.
func RecordModel(ctx context.Context, cfg httphost.Config, rec Recording, tmp string) (hist History, ans Answers, err error) {
	var reqs []Request
	hist, err = Record(tmp, func(dir string) error {
		if err := errors.Join(PlantKills(dir, rec.Kills), PlantStops(dir, rec.Stops)); err != nil {
			return err
		}
		cfg.Wrap = fmt.Sprintf("%s:%d:%d:%s", wrapName, max(rec.Kills, rec.Stops), rec.Speed, dir)
		h, err := httphost.Start(cfg)
		if err != nil {
			return err
		}
		resume := Resume(dir, stopReturns, stopHold)
		reqs = sendAll(ctx, h.URL, rec)
		ans = count(reqs)
		resumed := resume()
		err = h.Close()
		if rec.Kills == 0 && (err != nil || ans.Failed > 0) {
			return errors.Join(err, fmt.Errorf("linearizability: %d of %d requests failed", ans.Failed, rec.Clients*rec.Hits))
		}
		if resumed != rec.Stops {
			return fmt.Errorf("linearizability: %d processes were to stop mid-hit, %d did", rec.Stops, resumed)
		}
		return nil
	})
	hist.Requests = reqs
	return hist, ans, err
}

// sendAll sends rec's load: Clients goroutines, each with a connection of
// its own, each sending Hits requests in turn, each named in
// httphost.RequestHeader, and returns what each client saw.
func sendAll(ctx context.Context, url string, rec Recording) []Request {
	reqs := make([]Request, rec.Clients*rec.Hits)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range rec.Clients {
		wg.Go(func() {
			client := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
			defer client.CloseIdleConnections()
			for n := range rec.Hits {
				paced(ctx, start.Add(time.Duration(n)*rec.Gap))
				name := fmt.Sprintf("%d-%d", c+1, n+1)
				sent := monotonic()
				r := post(ctx, client, url, name)
				r.Name, r.Client, r.Sent, r.Done = name, c, sent, monotonic()
				reqs[c*rec.Hits+n] = r
			}
		})
	}
	wg.Wait()
	return reqs
}

// count counts what the clients got back.
func count(reqs []Request) Answers {
	var ans Answers
	for _, r := range reqs {
		switch r.Status {
		case http.StatusOK:
			ans.OK++
		case http.StatusTooManyRequests:
			ans.Throttled++
		default:
			ans.Failed++
		}
	}
	return ans
}

// post sends one request named name and returns what came back: status
// 0 when nothing did.
func post(ctx context.Context, client *http.Client, url, name string) Request {
	none := Request{Remaining: -1, RetryAfter: -1}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return none
	}
	req.Header.Set(httphost.RequestHeader, name)
	resp, err := client.Do(req)
	if err != nil {
		return none
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return readAnswer(resp.StatusCode, resp.Header)
}

// paced returns at the instant at, or at once if it has passed or ctx is
// done.
func paced(ctx context.Context, at time.Time) {
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}
