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
		n, dir, ok := strings.Cut(arg, ":")
		faults, err := strconv.Atoi(n)
		if !ok || err != nil {
			return nil, fmt.Errorf("linearizability: wrapper argument %q: want FAULTS:DIR", arg)
		}
		rec, err := NewRecorder(dir, faults)
		if err != nil {
			return nil, err
		}
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
	hist, err = Record(tmp, func(dir string) error {
		if err := errors.Join(PlantKills(dir, rec.Kills), PlantStops(dir, rec.Stops)); err != nil {
			return err
		}
		cfg.Wrap = fmt.Sprintf("%s:%d:%s", wrapName, max(rec.Kills, rec.Stops), dir)
		h, err := httphost.Start(cfg)
		if err != nil {
			return err
		}
		resume := Resume(dir, stopReturns, stopHold)
		ans = sendAll(ctx, h.URL, rec)
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
	return hist, ans, err
}

// sendAll sends rec's load: Clients goroutines, each with a connection of
// its own, each sending Hits requests in turn.
func sendAll(ctx context.Context, url string, rec Recording) Answers {
	var (
		mu  sync.Mutex
		ans Answers
		wg  sync.WaitGroup
	)
	for range rec.Clients {
		wg.Go(func() {
			client := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
			defer client.CloseIdleConnections()
			for range rec.Hits {
				status := post(ctx, client, url)
				mu.Lock()
				switch status {
				case http.StatusOK:
					ans.OK++
				case http.StatusTooManyRequests:
					ans.Throttled++
				default:
					ans.Failed++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ans
}

// post sends one request and returns its status, 0 when none came.
func post(ctx context.Context, client *http.Client, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return 0
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode
}
