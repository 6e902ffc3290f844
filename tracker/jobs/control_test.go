package jobs_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/tracker/jobs"
)

// Open starts the workers it was asked for without calling that a
// shortfall (it logged six "Job X has only 0, wants 1" warnings on every
// start); a real shortfall, a worker that died or a raised !want, still
// logs the original's line.
func TestManager_OpenIsQuietShortfallIsNot(t *testing.T) {
	c := newCluster(t)
	c.addNode(1)
	var buf syncBuf
	o := fastOptions(t)
	o.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	m := start(t, c.st, o)
	running := func(name string, n int) func() bool {
		return func() bool {
			for _, s := range m.Stats() {
				if s.Name == name {
					return s.Running == n
				}
			}
			return false
		}
	}
	for _, name := range []string{jobs.JobMonitor, jobs.JobReaper, jobs.JobMaster, jobs.JobReplicate, jobs.JobDelete, jobs.JobFsck} {
		waitFor(t, 5*time.Second, name+" running", running(name, 1))
	}
	if got := buf.String(); strings.Contains(got, "has only") {
		t.Errorf("Open logged warnings starting the workers it was asked for:\n%s", got)
	}

	if n := m.Message(jobs.JobReplicate, ":shutdown"); n != 1 {
		t.Fatalf("!to replicate :shutdown reached %d workers; want 1", n)
	}
	// The supervisor says so once the worker has returned, after the
	// request: the death first, then the shortfall.
	waitFor(t, 5*time.Second, "the replacement's line", func() bool {
		return strings.Contains(buf.String(), `"Job replicate has only 0, wants 1, making 1."`)
	})
	got := buf.String()
	if died := strings.Index(got, "(replicate) died: 0 (UNEXPECTED)"); died < 0 || died > strings.Index(got, `"Job replicate has only`) {
		t.Errorf("the log lacks the worker's death before its replacement:\n%s", got)
	}
	if err := m.SetWant(jobs.JobDelete, 3); err != nil {
		t.Fatal(err)
	}
	if want := `"Job delete has only 1, wants 3, making 2."`; !strings.Contains(buf.String(), want) {
		t.Errorf("after !want 3 delete the log lacks %s:\n%s", want, buf.String())
	}
}
