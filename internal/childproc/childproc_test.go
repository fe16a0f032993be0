package childproc

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	RunIfChild(Roles{"childproc/work": workChild})
	os.Exit(m.Run())
}

// workChild says "started", works for CHILDPROC_WORK, in steps of 10
// ms, beating a Pulse every CHILDPROC_PULSE unless that is 0, then says
// "result done".
func workChild() error {
	work, err := time.ParseDuration(os.Getenv("CHILDPROC_WORK"))
	if err != nil {
		return err
	}
	every, err := time.ParseDuration(os.Getenv("CHILDPROC_PULSE"))
	if err != nil {
		return err
	}
	pulse := Pulse{every: every}
	Say("started")
	for end := time.Now().Add(work); time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond) // the work: a step that takes time
		if every > 0 {
			pulse.Beat()
		}
	}
	Say("result done")
	return nil
}

// A child that works longer than its parent waits for a line still gets
// its result through while it says it is alive at least that often; one
// that says nothing in that time is taken as hung, its silence named.
func TestExpectWaitsForAChildThatSaysItIsAlive(t *testing.T) {
	for _, tt := range []struct {
		name, pulse string
		wantErr     string
	}{
		{"alive every 50 ms", "50ms", ""},
		{"silent", "0s", "printed nothing within 1s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(tt.name, "childproc/work", "CHILDPROC_WORK=2.5s", "CHILDPROC_PULSE="+tt.pulse)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Kill)
			// Starting is not the work: a race-enabled binary took over a
			// second to start on the busy suite. The short wait is the
			// work's alone.
			if _, err := p.Expect("started"); err != nil {
				t.Fatal(err)
			}
			p.timeout = time.Second
			got, err := p.Expect("result ")
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Expect: %v, want the result", err)
			case tt.wantErr == "" && got != "done":
				t.Fatalf("Expect = %q, want %q", got, "done")
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Expect = %q, %v; want an error saying %q", got, err, tt.wantErr)
			}
		})
	}
}
