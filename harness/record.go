package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/ratelab/ratelab/linearizability"
)

// Recording is a run whose every hit was recorded for package
// linearizability: Clients clients, each sending Hits requests one after
// another, all of them at once.
type Recording struct {
	Clients, Hits int
	// Kills is how many processes kill themselves with SIGKILL in the
	// middle of a hit (linearizability.PlantKills); their clients get an
	// error, and the run goes on.
	Kills int
	// Stops is how many processes stop themselves with SIGSTOP in the
	// middle of a hit (linearizability.PlantStops), each continued once
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

// Record runs cfg's model with every process recording its hits in a
// directory of its own under tmp, sends rec's load, stops the model and
// returns the history. A request that gets neither 200 nor 429, or a
// model that does not stop cleanly, is an error unless processes were
// told to die; so is a stop token no process took.
func Record(ctx context.Context, cfg Config, rec Recording, tmp string) (hist linearizability.History, ans Answers, err error) {
	hist, err = linearizability.Record(tmp, func(dir string) error {
		if err := errors.Join(linearizability.PlantKills(dir, rec.Kills), linearizability.PlantStops(dir, rec.Stops)); err != nil {
			return err
		}
		cfg.App.History, cfg.App.HistoryFaults = dir, max(rec.Kills, rec.Stops)
		h, err := Start(cfg)
		if err != nil {
			return err
		}
		resume := linearizability.Resume(dir, stopReturns, stopHold)
		ans = h.sendAll(ctx, rec)
		resumed := resume()
		err = h.Close()
		if rec.Kills == 0 && (err != nil || ans.Failed > 0) {
			return errors.Join(err, fmt.Errorf("harness: %d of %d requests failed", ans.Failed, rec.Clients*rec.Hits))
		}
		if resumed != rec.Stops {
			return fmt.Errorf("harness: %d processes were to stop mid-hit, %d did", rec.Stops, resumed)
		}
		return nil
	})
	return hist, ans, err
}

// sendAll sends rec's load: Clients goroutines, each with a connection of
// its own, each sending Hits requests in turn.
func (h *Host) sendAll(ctx context.Context, rec Recording) Answers {
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
				status := post(ctx, client, h.URL)
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
