package main

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gomogile/gomogile/client"
)

// cmdFsck is mogadm's "fsck" with the same verbs, plus --watch on status.
func cmdFsck(ctx context.Context, e *env, args []string) error {
	verb, args, err := sub("fsck", args, "start", "stop", "status", "reset", "clearlog", "printlog", "taillog")
	if err != nil {
		return err
	}
	fs := newFlags(e, "fsck "+verb)
	switch verb {
	case "start", "stop", "clearlog":
		if _, err := parse(fs, args, 0, 0); err != nil {
			return err
		}
		switch verb {
		case "start":
			err = e.c.FsckStart(ctx)
		case "stop":
			err = e.c.FsckStop(ctx)
		default:
			_, err = e.c.Do(ctx, "fsck_clearlog", nil)
		}
		return err
	case "reset":
		policyOnly := fs.Bool("policy-only", false, "only check replication policy, not file contents")
		start := fs.Int64("startpos", 0, "begin after this fid")
		if _, err := parse(fs, args, 0, 0); err != nil {
			return err
		}
		return e.c.FsckReset(ctx, *policyOnly, *start)
	case "printlog":
		if _, err := parse(fs, args, 0, 0); err != nil {
			return err
		}
		fmt.Fprint(e.stdout, fsckLogHeader)
		_, err := printFsckLog(ctx, e, 0)
		return err
	case "taillog":
		interval := fs.Duration("interval", 5*time.Second, "time between polls for new events")
		if _, err := parse(fs, args, 0, 0); err != nil {
			return err
		}
		if err := checkInterval("fsck taillog", *interval); err != nil {
			return err
		}
		return tailFsckLog(ctx, e, *interval)
	}
	watchOn, interval := watchFlags(fs)
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if *watchOn {
		if err := checkInterval("fsck status", *interval); err != nil {
			return err
		}
		return watch(ctx, e.stdout, *interval, fsckPoll(e.c))
	}
	st, err := e.c.FsckStatus(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 1, ' ', 0)
	running := "no"
	if st.Running {
		running = "yes (on " + st.Host + ")"
	}
	fmt.Fprintf(tw, "running:\t%s\n", running)
	fmt.Fprintf(tw, "policy only:\t%t\n", st.PolicyOnly)
	fmt.Fprintf(tw, "checked up to fid:\t%d of %d\n", st.MaxFidChecked, st.EndFid)
	fmt.Fprintf(tw, "queued, not checked:\t%d\n", st.QueueLength)
	if st.StartTime > 0 {
		fmt.Fprintf(tw, "started:\t%s\n", time.Unix(st.StartTime, 0).UTC().Format(time.RFC3339))
		end := st.StopTime
		if end == 0 {
			end = st.CurrentTime
		}
		if end >= st.StartTime {
			fmt.Fprintf(tw, "elapsed:\t%s\n", time.Duration(end-st.StartTime)*time.Second)
		}
	}
	codes := make([]string, 0, len(st.Counts))
	for k := range st.Counts {
		codes = append(codes, k)
	}
	sort.Strings(codes)
	for _, k := range codes {
		fmt.Fprintf(tw, "%s:\t%d\n", k, st.Counts[k])
	}
	return tw.Flush()
}

// fsckPoll reads fsck_status for --watch. Progress is the highest fid
// queued for checking against the last fid at start (end_fid), as mogadm
// shows it; the job is over once fsck no longer runs and its queue is
// empty (until then it is "finishing"). It stopped, rather than finished, if it ended short of end_fid.
func fsckPoll(c *client.Client) poll {
	var m meter
	return func(ctx context.Context) (string, bool, error) {
		st, err := c.FsckStatus(ctx)
		if err != nil {
			return "", false, err
		}
		rate, eta, ok := m.observe(time.Now(), st.MaxFidChecked, st.EndFid)
		line := progress(st.MaxFidChecked, st.EndFid, "fids", rate, eta, ok) +
			fmt.Sprintf(" | %d queued", st.QueueLength) + fsckEvents(st.Counts)
		switch {
		case st.Running:
			return "fsck running: " + line, false, nil
		case st.MaxFidChecked < st.EndFid:
			return "fsck stopped: " + line, true, fmt.Errorf("fsck %w at fid %d of %d", errStopped, st.MaxFidChecked, st.EndFid)
		case st.QueueLength > 0:
			return "fsck finishing: " + line, false, nil
		}
		return "fsck done: " + line, true, nil
	}
}

// fsckEvents is " | MISS=2 NOPA=1" (the problems found), or "" without any.
func fsckEvents(counts map[string]int64) string {
	codes := make([]string, 0, len(counts))
	for k, n := range counts {
		if n != 0 {
			codes = append(codes, k)
		}
	}
	if len(codes) == 0 {
		return ""
	}
	sort.Strings(codes)
	for i, k := range codes {
		codes[i] = k + "=" + strconv.FormatInt(counts[k], 10)
	}
	return " | " + strings.Join(codes, " ")
}

const fsckLogHeader = "time                 event        fid  devid\n"

// printFsckLog prints every fsck log row after logid, a page
// (fsck_getlog's 100 rows) at a time, and returns the last logid seen.
func printFsckLog(ctx context.Context, e *env, after int64) (int64, error) {
	for {
		reply, err := e.c.Do(ctx, "fsck_getlog", url.Values{"after_logid": {strconv.FormatInt(after, 10)}})
		if err != nil {
			return after, err
		}
		n, err := strconv.Atoi(reply.Get("row_count"))
		if err != nil {
			return after, fmt.Errorf("fsck_getlog: row_count %q: %w", reply.Get("row_count"), client.ErrProtocol)
		}
		if n == 0 {
			return after, nil
		}
		for i := 1; i <= n; i++ {
			row := func(k string) string { return reply.Get("row_" + strconv.Itoa(i) + "_" + k) }
			id, err := strconv.ParseInt(row("logid"), 10, 64)
			if err != nil || id <= after {
				return after, fmt.Errorf("fsck_getlog: row %d logid %q after %d: %w", i, row("logid"), after, client.ErrProtocol)
			}
			after = id
			when := row("utime")
			if u, err := strconv.ParseInt(when, 10, 64); err == nil {
				when = time.Unix(u, 0).UTC().Format(time.RFC3339)
			}
			dev := row("devid")
			if dev == "" {
				dev = "-"
			}
			fmt.Fprintf(e.stdout, "%-20s %5s %10s %6s\n", when, row("evcode"), row("fid"), dev)
		}
	}
}

// tailFsckLog prints the last 20 events, as mogadm does, then new ones as
// they come, until ctx ends (the operator's interrupt ends it cleanly).
func tailFsckLog(ctx context.Context, e *env, interval time.Duration) error {
	st, err := e.c.FsckStatus(ctx)
	if err != nil {
		return err
	}
	fmt.Fprint(e.stdout, fsckLogHeader)
	after := max(st.MaxLogID-20, 0)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		after, err = printFsckLog(ctx, e, after)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
