package tracker

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// recentQueries keeps the last 50 requests for "!recent".
type recentQueries struct {
	mu   sync.Mutex
	list []string
}

func (r *recentQueries) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, s)
	if len(r.list) > 50 {
		r.list = r.list[len(r.list)-50:]
	}
}

func (r *recentQueries) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.list...)
}

// pendingQueries are the requests waiting for a query slot, in arrival
// order, as "!queue" lists them.
type pendingQueries struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]string
}

// add records line as waiting; the returned func removes it.
func (p *pendingQueries) add(line string) func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[uint64]string{}
	}
	id := p.next
	p.next++
	p.m[id] = line
	return func() {
		p.mu.Lock()
		delete(p.m, id)
		p.mu.Unlock()
	}
}

func (p *pendingQueries) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]uint64, 0, len(p.m))
	for id := range p.m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = p.m[id]
	}
	return out
}

// The original's argument patterns of !want and !to.
var (
	wantArgs = regexp.MustCompile(`^(\d+)\s+(\S+)`)
	toArgs   = regexp.MustCompile(`^(\S+)\s+(.+)`)
)

// admin answers the ProcManager "!" commands; the reply always ends ".\r\n".
// Commands match by prefix, as the original's regexes did, in the
// original's order; each is a function of its own below.
func (t *Tracker) admin(c *conn, req Request) string {
	cmd, args := req.Cmd, req.Raw
	var out []string
	switch {
	case cmd == "stats":
		out = t.adminStats()
	case strings.HasPrefix(cmd, "shutdown"):
		out = t.adminShutdown(args)
	case strings.HasPrefix(cmd, "jobs"):
		out = t.adminJobs()
	case strings.HasPrefix(cmd, "want"):
		out = t.adminWant(args)
	case strings.HasPrefix(cmd, "to"):
		out = t.adminTo(args)
	case strings.HasPrefix(cmd, "queue"), strings.HasPrefix(cmd, "pend"):
		// Each request waiting for a query slot, oldest first, as the
		// original's "<ip> <request line>".
		out = t.pendq.all()
	case strings.HasPrefix(cmd, "watch"):
		if t.watch.toggle(c) {
			out = []string{"Added you to watcher list."}
		} else {
			out = []string{"Removed you from watcher list."}
		}
	case strings.HasPrefix(cmd, "recent"):
		out = t.recent.all()
	case strings.HasPrefix(cmd, "version"):
		out = []string{Version}
	default:
		return adminHelp + ".\r\n"
	}
	out = append(out, ".", "")
	return strings.Join(out, "\r\n")
}

// workersOpen reports whether background workers run to ask.
func (t *Tracker) workersOpen() bool { return t.q.JobsRunning() }

// adminStats is "!stats": the query counters, then the original's
// counters sorted by name, the workers' work counters among them.
func (t *Tracker) adminStats() []string {
	limit, active := t.limiter.get()
	out := []string{
		fmt.Sprintf("uptime %d", int64(time.Since(t.started).Seconds())),
		fmt.Sprintf("pending_queries %d", t.stats.pending.Load()),
		fmt.Sprintf("processing_queries %d", t.stats.inProgress.Load()),
		fmt.Sprintf("bored_queryworkers %d", max(limit-active, 0)),
	}
	st := map[string]int64{
		"queries":               t.stats.queries.Load(),
		"times_out_of_qworkers": t.stats.outOfWorkers.Load(),
		"connections_refused":   t.stats.connsRefused.Load(),
	}
	t.mu.Lock()
	st["connections"] = int64(len(t.conns))
	t.mu.Unlock()
	if t.workersOpen() {
		for k, v := range t.q.Jobs.WorkCounters() {
			st[k] = v
		}
	}
	keys := make([]string, 0, len(st))
	for k := range st {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s %d", k, st[k]))
	}
	return out
}

// adminShutdown is "!shutdown", when the daemon enabled it.
func (t *Tracker) adminShutdown(args string) []string {
	if t.onStop == nil {
		return []string{"ERROR: shutdown is not enabled on this tracker"}
	}
	t.log.Warn("user requested shutdown", "args", args)
	t.onStop()
	return nil
}

// adminJobs is "!jobs": count, desired and pids of every job that has had
// workers, the query workers included.
func (t *Tracker) adminJobs() []string {
	limit, _ := t.limiter.get()
	jobs := []JobStatus{{Job: "queryworker", Count: limit, Desired: limit, Started: true}}
	if t.workersOpen() {
		jobs = append(jobs, jobStatus(t.q.Jobs)...)
	}
	return jobLines(jobs, os.Getpid())
}

// jobLines are "!jobs"' lines for jobs, sorted by job; self stands in as
// the pid of each goroutine worker.
func jobLines(jobs []JobStatus, self int) []string {
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].Job < jobs[j].Job })
	var out []string
	for _, j := range jobs {
		if !j.Started {
			continue // the original lists only jobs it has had children for
		}
		// A worker process has its own pid (mogilefsd runs each in one);
		// goroutine workers (and the query workers) have none, so the
		// tracker's own pid stands in, once per worker, so that scripts
		// counting pids count workers.
		var pids []string
		for _, pid := range j.Pids {
			pids = append(pids, strconv.Itoa(pid))
		}
		if !j.Processes {
			for range j.Count {
				pids = append(pids, strconv.Itoa(self))
			}
		}
		out = append(out, fmt.Sprintf("%s count %d", j.Job, j.Count),
			fmt.Sprintf("%s desired %d", j.Job, j.Desired),
			fmt.Sprintf("%s pids %s", j.Job, strings.Join(pids, " ")))
	}
	return out
}

// adminWant is "!want <count> <jobclass>".
func (t *Tracker) adminWant(args string) []string {
	m := wantArgs.FindStringSubmatch(args)
	if m == nil {
		return []string{"ERROR: usage: !want <count> <jobclass>"}
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n > 500 {
		n = 500 // as the original, which caps the count at 500
	}
	job := m[2]
	classes := []string{"queryworker"}
	if t.workersOpen() {
		classes = append(classes, t.q.Jobs.Classes()...)
	}
	sort.Strings(classes)
	switch {
	case job == "queryworker":
		// 0 is allowed, as in the original: requests then wait for a
		// slot (admin commands are still answered) until !want raises it.
		if have, _ := t.limiter.get(); n > have {
			// The line the original's parent logs as it forks the
			// missing query workers; scripts on !watch wait for it.
			t.log.Warn(fmt.Sprintf("Job queryworker has only %d, wants %d, making %d.", have, n, n-have))
		}
		t.limiter.set(n)
	case slices.Contains(classes, job):
		// The original answers so even when it ignores the count (more
		// than one monitor or job_master); so do we.
		_ = t.q.Jobs.SetWant(job, n)
	default:
		return []string{fmt.Sprintf("ERROR: Invalid class '%s'.  Valid classes: %s", job, strings.Join(classes, ", "))}
	}
	return []string{fmt.Sprintf("Now desiring %d children doing '%s'.", n, job)}
}

// adminTo is "!to <jobclass> <message>".
func (t *Tracker) adminTo(args string) []string {
	m := toArgs.FindStringSubmatch(args)
	if m == nil {
		return []string{"ERROR: usage: !to <jobclass> <message>"}
	}
	n := 0
	switch {
	case m[1] == "queryworker":
		// Query slots are not goroutines that read messages; the count
		// is what the original would report, and nothing else happens.
		n, _ = t.limiter.get()
	case t.workersOpen():
		n = t.q.Jobs.Message(m[1], m[2])
	}
	return []string{fmt.Sprintf("Message sent to %d children.", n)}
}

const adminHelp = `Mogilefsd admin commands:

    !version    Server version
    !recent     Recently executed queries and how long they took.
    !queue      Queries that are pending execution.
    !stats      General stats on what we're up to.
    !watch      Observe errors/messages from children.
    !jobs       Outstanding job counts, desired level, and pids.
    !shutdown   Immediately kill all of mogilefsd.

    !to <job class> <message>
                Send <message> to all workers of <job class>.
                Mostly used for debugging.

    !want <count> <job class>
                Alter the level of workers of this class desired.
                Example: !want 20 queryworker, !want 3 replicate.
                See !jobs for what jobs are available.

`
