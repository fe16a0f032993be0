package harness

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/ratelab/ratelab"
)

// env is a's configuration as its children read it (appFromEnv).
func (a App) env() []string {
	return []string{
		"RATELAB_STORE=" + a.Store,
		"RATELAB_DIR=" + a.Dir,
		"RATELAB_REDIS=" + a.RedisURL,
		"RATELAB_REDIS_WAIT=" + strconv.Itoa(a.RedisWait),
		"RATELAB_REDIS_WAIT_TIMEOUT=" + a.RedisWaitTimeout.String(),
		"RATELAB_DSN=" + a.DSN,
		"RATELAB_CONNS=" + strconv.Itoa(a.Conns),
		"RATELAB_PREFIX=" + a.Prefix,
		"RATELAB_LIMIT=" + strconv.Itoa(a.Limit),
		"RATELAB_WINDOW=" + a.Window.String(),
		"RATELAB_FAIL=" + a.FailPolicy.String(),
		"RATELAB_NOW=" + formatNow(a.Now),
		"RATELAB_ALGORITHM=" + string(a.Algorithm),
		"RATELAB_BURST=" + strconv.Itoa(a.Burst),
		"RATELAB_FRONT_TOKEN=" + a.FrontToken,
		"RATELAB_TRUSTED_PROXIES=" + a.TrustedProxies,
		"RATELAB_FORWARDED_HEADER=" + a.ForwardedHeader,
		"RATELAB_HISTORY=" + a.History,
		"RATELAB_HISTORY_FAULTS=" + strconv.Itoa(a.HistoryFaults),
	}
}

// appFromEnv reads the configuration a child's parent gave it (env), and
// checks it: the one check of a child's configuration.
func appFromEnv() (CheckedApp, error) {
	a, err := parseEnv()
	if err != nil {
		return CheckedApp{}, err
	}
	return a.Check()
}

// parseEnv reads the configuration a child's parent gave it.
func parseEnv() (App, error) {
	a := App{Store: os.Getenv("RATELAB_STORE"), Dir: os.Getenv("RATELAB_DIR"), RedisURL: os.Getenv("RATELAB_REDIS"),
		DSN: os.Getenv("RATELAB_DSN"), FrontToken: os.Getenv("RATELAB_FRONT_TOKEN"), Prefix: os.Getenv("RATELAB_PREFIX"),
		TrustedProxies: os.Getenv("RATELAB_TRUSTED_PROXIES"), ForwardedHeader: os.Getenv("RATELAB_FORWARDED_HEADER"),
		History: os.Getenv("RATELAB_HISTORY")}
	var err error
	if a.Limit, err = strconv.Atoi(os.Getenv("RATELAB_LIMIT")); err != nil {
		return a, fmt.Errorf("RATELAB_LIMIT: %w", err)
	}
	if a.Window, err = time.ParseDuration(os.Getenv("RATELAB_WINDOW")); err != nil {
		return a, fmt.Errorf("RATELAB_WINDOW: %w", err)
	}
	if a.FailPolicy, err = ratelab.ParseFailPolicy(os.Getenv("RATELAB_FAIL")); err != nil {
		return a, err
	}
	a.Algorithm = ratelab.Algorithm(os.Getenv("RATELAB_ALGORITHM"))
	if a.Burst, err = strconv.Atoi(os.Getenv("RATELAB_BURST")); err != nil {
		return a, fmt.Errorf("RATELAB_BURST: %w", err)
	}
	if a.Conns, err = strconv.Atoi(os.Getenv("RATELAB_CONNS")); err != nil {
		return a, fmt.Errorf("RATELAB_CONNS: %w", err)
	}
	if a.RedisWait, err = strconv.Atoi(os.Getenv("RATELAB_REDIS_WAIT")); err != nil {
		return a, fmt.Errorf("RATELAB_REDIS_WAIT: %w", err)
	}
	if a.RedisWaitTimeout, err = time.ParseDuration(os.Getenv("RATELAB_REDIS_WAIT_TIMEOUT")); err != nil {
		return a, fmt.Errorf("RATELAB_REDIS_WAIT_TIMEOUT: %w", err)
	}
	if v := os.Getenv("RATELAB_HISTORY_FAULTS"); v != "" {
		if a.HistoryFaults, err = strconv.Atoi(v); err != nil {
			return a, fmt.Errorf("RATELAB_HISTORY_FAULTS: %w", err)
		}
	}
	if v := os.Getenv("RATELAB_NOW"); v != "" {
		if a.Now, err = time.Parse(time.RFC3339Nano, v); err != nil {
			return a, fmt.Errorf("RATELAB_NOW: %w", err)
		}
	}
	return a, nil
}

// formatNow is t as RATELAB_NOW carries it: "" for the zero time (the
// clock).
func formatNow(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}
