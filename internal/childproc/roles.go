package childproc

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// EnvRole is the one environment variable that turns a re-executed binary
// into a child: its value names the child's role.
const EnvRole = "RATELAB_CHILD"

// Roles maps role names to what a child of that role runs. Each package
// that re-executes a binary exports its roles, named "package/role", and
// every binary that can be re-executed — the ratelab command, each test
// binary — passes the roles it serves to RunIfChild.
type Roles map[string]func() error

// RunIfChild runs the role named by EnvRole and exits: 0 when the role
// returns nil, 2 with its error on stderr otherwise. A role that none of
// roles holds fails as loudly: the binary was asked to be a child it
// cannot be. In a parent, where EnvRole is unset, RunIfChild returns at
// once. Call it first thing in main and in TestMain, before flags are
// parsed: the same binary is both parent and child.
func RunIfChild(roles ...Roles) {
	role, ok := os.LookupEnv(EnvRole)
	if !ok {
		return
	}
	for _, rs := range roles {
		if run, ok := rs[role]; ok {
			if err := run(); err != nil {
				fmt.Fprintf(os.Stderr, "ratelab child (pid %d, role %s): %v\n", os.Getpid(), role, err)
				os.Exit(2)
			}
			os.Exit(0)
		}
	}
	var known []string
	for _, rs := range roles {
		for name := range rs {
			known = append(known, name)
		}
	}
	slices.Sort(known)
	fmt.Fprintf(os.Stderr, "ratelab child (pid %d): unknown role %q: this binary serves %s\n", os.Getpid(), role, strings.Join(known, ", "))
	os.Exit(2)
}

// Env is the environment that makes a re-executed binary a child of role:
// EnvRole, and the race detector told not to sleep a second at exit (a
// CGI child exits after every request), keeping any other GORACE setting.
func Env(role string) []string {
	return []string{EnvRole + "=" + role, "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")}
}
