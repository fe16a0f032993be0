package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The usage is made from the command table: every command has its line
// and its help, every command runs, and the package documentation names
// every command in its list of families. Every flag a usage line names is
// one the command defines (its -h), shown with the default it has.
func TestUsageComesFromTheCommandTable(t *testing.T) {
	code, out, _ := cli("help")
	require.Equal(t, 0, code)
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	doc := string(src[:strings.Index(string(src), "package main")])
	for _, c := range commands() {
		line := regexp.MustCompile(`(?m)^  ratelab ` + regexp.QuoteMeta(fmt.Sprintf("%-8s", c.name)) + ` (.*)$`).FindStringSubmatch(out)
		if !assert.NotNil(t, line, "usage line of %s", c.name) {
			continue
		}
		assert.Regexp(t, `(?m)^  `+c.name+` +`+regexp.QuoteMeta(c.help)+`$`, out, "help line of %s", c.name)
		assert.Regexp(t, `[ ,]`+c.name+`[ ,]`, doc, "the package doc names %s", c.name)
		defined := definedFlags(usageHelp(t, c.name))
		for _, m := range regexp.MustCompile(`(?:^|[\s\[])-([a-z][a-z-]*)(=false|\s[^\s\]]+)?`).FindAllStringSubmatch(line[1], -1) {
			name, shown := m[1], strings.TrimSpace(m[2])
			fl, ok := defined[name]
			if !assert.True(t, ok, "%s's usage names -%s, which it does not define", c.name, name) {
				continue
			}
			if msg := fl.check(shown); msg != "" {
				t.Errorf("ratelab %s: usage shows -%s %q: got %s", c.name, name, shown, msg)
			}
		}
	}
	// and the table writes no default by hand: [-limit], not [-limit 30].
	for _, c := range commands() {
		defined := definedFlags(usageHelp(t, c.name))
		for _, m := range regexp.MustCompile(`\[-([a-z][a-z-]*) ([^\s\]|]+)\]`).FindAllStringSubmatch(c.args, -1) {
			if fl := defined[m[1]]; fl.def != "" && sameValue(fl.typ, m[2], fl.def) {
				t.Errorf("ratelab %s: the table writes [-%s %s] by hand: got the default twice, want [-%s]", c.name, m[1], m[2], m[1])
			}
		}
	}
	code, _, errOut := cli("frobnicate")
	assert.Equal(t, 2, code)
	for _, c := range commands() {
		assert.Contains(t, errOut, c.name, "the unknown-command line lists %s", c.name)
	}
}

// usageHelp is what ratelab COMMAND -h prints.
func usageHelp(t *testing.T, command string) string {
	t.Helper()
	code, help, _ := cli(command, "-h")
	require.Equal(t, 0, code, "%s -h", command)
	return help
}

// definedFlag is one flag as -h prints it: its value's type ("" for a
// bool) and its default ("" for the zero value).
type definedFlag struct{ typ, def string }

// definedFlags reads the flags out of a command's -h (flag.PrintDefaults).
func definedFlags(help string) map[string]definedFlag {
	out := map[string]definedFlag{}
	re := regexp.MustCompile(`(?m)^  -([a-z][a-z-]*)(?: (\S+))?(?:\t|\n    \t)(.*)$`)
	for _, m := range re.FindAllStringSubmatch(help, -1) {
		fl := definedFlag{typ: m[2]}
		if d := regexp.MustCompile(`\(default (.*)\)$`).FindStringSubmatch(m[3]); d != nil {
			fl.def = d[1]
			if u, err := strconv.Unquote(d[1]); err == nil {
				fl.def = u
			}
		}
		out[m[1]] = fl
	}
	return out
}

// check returns what is wrong with a usage line showing the flag as
// shown, or "": a bool shows no value (=false if it defaults to true); a
// flag with a default shows it, alone or among choices a|b|c; a flag
// without one shows a placeholder (DIR, N) or its choices.
func (fl definedFlag) check(shown string) string {
	placeholder := regexp.MustCompile(`^[A-Z][A-Z0-9,…]*$`).MatchString(shown)
	choices := strings.Split(shown, "|")
	switch {
	case fl.typ == "" && fl.def == "true":
		if shown != "=false" {
			return "a bool that defaults to true, want =false"
		}
	case fl.typ == "":
		if shown != "" {
			return "a bool, want no value"
		}
	case fl.def == "":
		if !placeholder && len(choices) < 2 {
			return "no default, want a placeholder or the choices"
		}
	case len(choices) > 1:
		if !slices.Contains(choices, fl.def) {
			return fmt.Sprintf("choices without the default %q", fl.def)
		}
	case !sameValue(fl.typ, shown, fl.def):
		return fmt.Sprintf("the default is %q", fl.def)
	}
	return ""
}

// sameValue compares two spellings of a value of type typ.
func sameValue(typ, a, b string) bool {
	if typ == "duration" {
		da, errA := time.ParseDuration(a)
		db, errB := time.ParseDuration(b)
		return errA == nil && errB == nil && da == db
	}
	return a == b
}
