package harness

import (
	"encoding/json"
	"fmt"
	"os"
)

// envApp is the one environment variable that carries the App to every
// process the harness starts: the App as JSON. One value, not a variable
// per setting, and the environment, not the arguments: a DSN's password
// in the arguments would be shown to every account on the machine by ps,
// where a process's environment is its owner's to read.
const envApp = "RATELAB_APP"

// env is a's configuration as its children read it (appFromEnv).
func (a App) env() []string {
	b, err := json.Marshal(a)
	if err != nil {
		panic(err) // an App holds only values JSON encodes
	}
	return []string{envApp + "=" + string(b)}
}

// appFromEnv reads the configuration a child's parent gave it (env), and
// checks it: the one check of a child's configuration.
func appFromEnv() (CheckedApp, error) {
	var a App
	if err := json.Unmarshal([]byte(os.Getenv(envApp)), &a); err != nil {
		return CheckedApp{}, fmt.Errorf("%s: %w", envApp, err)
	}
	return a.Check()
}
