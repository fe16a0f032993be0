package httphost

import (
	"encoding/json"
	"fmt"
	"os"
)

// envSettings is the one environment variable that carries a host's
// settings to every process it starts, as JSON: one value, not a
// variable per setting, and the environment, not the arguments — a DSN's
// password in the arguments would be shown to every account on the
// machine by ps, where a process's environment is its owner's to read.
const envSettings = "RATELAB_HOST"

// env is s as a host's children read it (fromEnv).
func (s settings) env() []string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // settings hold only values JSON encodes
	}
	return []string{envSettings + "=" + string(b)}
}

// fromEnv reads the settings a child's host gave it (env), and checks
// them: the one check of a child's configuration.
func fromEnv() (checked, error) {
	var s settings
	if err := json.Unmarshal([]byte(os.Getenv(envSettings)), &s); err != nil {
		return checked{}, fmt.Errorf("%s: %w", envSettings, err)
	}
	return s.check()
}
