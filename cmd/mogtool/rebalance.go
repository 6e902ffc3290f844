package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gomogile/gomogile/client"
)

// cmdRebalance is mogadm's "rebalance": the tracker's rebalance_* commands
// and the rebal_* server settings they keep.
func cmdRebalance(ctx context.Context, e *env, args []string) error {
	verb, args, err := sub("rebalance", args, "start", "stop", "status", "reset", "test", "policy", "settings")
	if err != nil {
		return err
	}
	fs := newFlags(e, "rebalance "+verb)
	switch verb {
	case "policy":
		return rebalancePolicy(ctx, e, args)
	case "start", "status":
		watchOn, interval := watchFlags(fs)
		if _, err := parse(fs, args, 0, 0); err != nil {
			return err
		}
		if *watchOn {
			if err := checkInterval("rebalance "+verb, *interval); err != nil {
				return err
			}
		}
		if verb == "start" {
			if _, err := e.c.Do(ctx, "rebalance_start", nil); err != nil {
				return err
			}
		}
		if *watchOn {
			return watch(ctx, e.stdout, *interval, rebalancePoll(e.c))
		}
		if verb == "start" {
			return nil
		}
		return printRebalanceStatus(ctx, e)
	}
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	switch verb {
	case "stop", "reset":
		_, err := e.c.Do(ctx, "rebalance_"+verb, nil)
		return err
	case "test":
		reply, err := e.c.Do(ctx, "rebalance_test", nil)
		if err != nil {
			return err
		}
		pol, err := e.c.ServerSetting(ctx, "rebal_policy")
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 1, ' ', 0)
		fmt.Fprintf(tw, "policy:\t%s\n", pol)
		fmt.Fprintf(tw, "source devices:\t%s\n", devList(reply.Get("sdevs")))
		fmt.Fprintf(tw, "destination devices:\t%s\n", devList(reply.Get("ddevs")))
		return tw.Flush()
	}
	return printRebalanceSettings(ctx, e.c, e.stdout)
}

// rebalancePolicy is "policy show" (the rebal_policy setting), "policy set
// POLICY..." and mogadm's "policy --options=POLICY". A policy's words may come as one quoted
// argument or several.
func rebalancePolicy(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 && strings.HasPrefix(args[0], "-") {
		fs := newFlags(e, "rebalance policy")
		opts := fs.String("options", "", "the policy to set (mogadm's form of policy set)")
		if _, err := parse(fs, args, 0, 0); err != nil {
			return err
		}
		if err := required(fs, "options"); err != nil {
			return err
		}
		return setRebalancePolicy(ctx, e.c, *opts)
	}
	verb, args, err := sub("rebalance policy", args, "show", "set")
	if err != nil {
		return err
	}
	fs := newFlags(e, "rebalance policy "+verb)
	if verb == "show" {
		if _, err := parse(fs, args, 0, 0); err != nil {
			return err
		}
		pol, err := e.c.ServerSetting(ctx, "rebal_policy")
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, pol)
		return nil
	}
	pos, err := parse(fs, args, 1, -1)
	if err != nil {
		return err
	}
	return setRebalancePolicy(ctx, e.c, strings.Join(pos, " "))
}

func setRebalancePolicy(ctx context.Context, c *client.Client, policy string) error {
	_, err := c.Do(ctx, "rebalance_set_policy", url.Values{"policy": {policy}})
	return err
}

// printRebalanceSettings prints the rebal_* settings but the saved state,
// as mogadm's "rebalance settings" does.
func printRebalanceSettings(ctx context.Context, c *client.Client, w io.Writer) error {
	ss, err := c.ServerSettings(ctx)
	if err != nil {
		return err
	}
	var keys []string
	for k := range ss {
		if strings.HasPrefix(k, "rebal_") && k != "rebal_state" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for _, k := range keys {
		fmt.Fprintf(tw, "%s:\t%s\n", k, ss[k])
	}
	return tw.Flush()
}

func devList(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// rebalStatus is what the tracker says about a rebalance run.
type rebalStatus struct {
	// host is rebal_host: the tracker running the run, "" once it ended.
	host string
	// state is rebal_state's key=value words (Rebalance.pm's saved
	// progress: fids_queued, source_devs, time_finished, ...).
	state map[string]string
	// queued counts the moves queued and not yet done (queue_length).
	queued int64
	// nonempty are the run's completed source devices that still hold
	// files (nonempty_devs; a move that failed leaves the queue too).
	nonempty []int
}

// getRebalStatus reads rebal_host before rebalance_status: the worker
// queues moves only while rebal_host is set, so a run seen ended here has
// every move it will make already counted in queued.
func getRebalStatus(ctx context.Context, c *client.Client) (*rebalStatus, error) {
	host, err := c.ServerSetting(ctx, "rebal_host")
	if err != nil {
		return nil, err
	}
	reply, err := c.Do(ctx, "rebalance_status", nil)
	if err != nil {
		return nil, err
	}
	rs := &rebalStatus{host: host, state: map[string]string{}}
	for _, w := range strings.Fields(reply.Get("state")) {
		k, v, _ := strings.Cut(w, "=")
		rs.state[k] = v
	}
	if q := reply.Get("queue_length"); q != "" {
		if rs.queued, err = strconv.ParseInt(q, 10, 64); err != nil {
			return nil, fmt.Errorf("rebalance_status: queue_length %q: %w", q, client.ErrProtocol)
		}
	}
	for _, d := range strings.Split(reply.Get("nonempty_devs"), ",") {
		if d == "" {
			continue
		}
		id, err := strconv.Atoi(d)
		if err != nil {
			return nil, fmt.Errorf("rebalance_status: nonempty_devs %q: %w", reply.Get("nonempty_devs"), client.ErrProtocol)
		}
		rs.nonempty = append(rs.nonempty, id)
	}
	return rs, nil
}

// num is a numeric state value; the worker writes only integers, and a
// missing key is 0 as in Rebalance.pm.
func (rs *rebalStatus) num(k string) int64 {
	n, _ := strconv.ParseInt(rs.state[k], 10, 64)
	return n
}

// devs counts a comma-separated device list of the state.
func (rs *rebalStatus) devs(k string) int {
	n := 0
	for _, s := range strings.Split(rs.state[k], ",") {
		if strings.TrimSpace(s) != "" {
			n++
		}
	}
	return n
}

func printRebalanceStatus(ctx context.Context, e *env) error {
	rs, err := getRebalStatus(ctx, e.c)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 1, ' ', 0)
	running := "no"
	if rs.host != "" {
		running = "yes (on " + rs.host + ")"
	}
	fmt.Fprintf(tw, "running:\t%s\n", running)
	fmt.Fprintf(tw, "queued, not moved:\t%d\n", rs.queued)
	if len(rs.nonempty) > 0 {
		fmt.Fprintf(tw, "completed, still holding files:\t%s\n", devNames(rs.nonempty))
	}
	keys := make([]string, 0, len(rs.state))
	for k := range rs.state {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := rs.state[k]
		if strings.HasPrefix(k, "time_") && v != "" && v != "0" {
			if u, err := strconv.ParseInt(v, 10, 64); err == nil {
				v += " (" + time.Unix(u, 0).UTC().Format(time.RFC3339) + ")"
			}
		}
		fmt.Fprintf(tw, "%s:\t%s\n", k, v)
	}
	return tw.Flush()
}

// rebalancePoll reads the run's progress for --watch: the fids handled of
// those queued so far (fids_queued less what is still queued; a device's
// fids are queued in batches, so the total grows while a device is read;
// a fid the worker could not move counts as handled, as its row leaves the
// queue too), source devices done, and the bytes queued. The run is over
// when no tracker runs it and its queue is empty (until then it is
// "finishing"); it stopped, rather than finished, if the worker never
// marked it finished.
func rebalancePoll(c *client.Client) poll {
	var m meter
	return func(ctx context.Context) (string, bool, error) {
		rs, err := getRebalStatus(ctx, c)
		if err != nil {
			return "", false, err
		}
		total := rs.num("fids_queued")
		done := max(total-rs.queued, 0)
		rate, eta, ok := m.observe(time.Now(), done, total)
		devDone := rs.devs("completed_devs")
		devAll := devDone + rs.devs("source_devs")
		cur := ""
		if d := rs.num("sdev_current"); d != 0 {
			devAll++
			cur = fmt.Sprintf(" now dev%d", d)
		}
		line := fmt.Sprintf("%s | devices %d/%d%s | %s queued", progress(done, total, "fids", rate, eta, ok),
			devDone, devAll, cur, byteSize(rs.num("bytes_queued")))
		if len(rs.nonempty) > 0 {
			line += " | files left on " + devNames(rs.nonempty)
		}
		finished := rs.num("time_finished") != 0
		switch {
		case rs.host != "":
			return "rebalance running: " + line, false, nil
		case !finished:
			return "rebalance stopped: " + line, true, fmt.Errorf("rebalance %w", errStopped)
		case rs.queued > 0:
			return "rebalance finishing: " + line, false, nil
		}
		return "rebalance done: " + line, true, nil
	}
}

// byteSize is n bytes in B, KB, MB, ... (powers of 1024, as mogadm's
// usage columns).
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "KMGTPE"[exp])
}

const drainHelp = `usage: mogtool drain [--move [--watch] [--interval DUR]] DEVID...

Sets each device's state to drain. Since MogileFS 2.40 drain only stops new
files from going to a device: the files already there stay where they are.
To move them off, run a rebalance with the policy drain prints
(from_devices=DEVID,... leave_in_drain_mode=1), or give --move, which sets
that policy and starts the rebalance (refused while another one runs).
--watch then follows it until every file is handled, and exits 1 if the
rebalance stops first, if it leaves files it could not move (no other
device to take a copy, say: the tracker's log names each) or if the
tracker fails.

`

// cmdDrain marks devices drain and, with --move, starts the rebalance
// that empties them.
func cmdDrain(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "drain")
	move := fs.Bool("move", false, "also set a rebalance policy moving the devices' files off, and start it")
	watchOn, interval := watchFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), drainHelp)
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args, 1, -1)
	if err != nil {
		return err
	}
	if *watchOn && !*move {
		return usagef("drain: --watch needs --move: drain alone moves no files, so there is no progress to follow")
	}
	if err := checkInterval("drain", *interval); err != nil {
		return err
	}
	ids := make([]int, len(pos))
	for i, p := range pos {
		if ids[i], err = atoiArg("DEVID", p); err != nil {
			return err
		}
	}
	hosts, err := deviceHosts(ctx, e.c)
	if err != nil {
		return err
	}
	// Check every device before changing any.
	for _, id := range ids {
		if _, ok := hosts[id]; !ok {
			return fmt.Errorf("drain: dev%d: %w", id, errNoDevice)
		}
	}
	for _, id := range ids {
		if err := e.c.SetState(ctx, hosts[id], id, "drain"); err != nil {
			return fmt.Errorf("drain dev%d: %w", id, err)
		}
		fmt.Fprintf(e.stdout, "dev%d (host %s): drain: no new files; its files stay until moved\n", id, hosts[id])
	}
	idList := make([]string, len(ids))
	for i, id := range ids {
		idList[i] = strconv.Itoa(id)
	}
	policy := "from_devices=" + strings.Join(idList, ",") + " leave_in_drain_mode=1"
	if !*move {
		fmt.Fprintf(e.stdout, "to move the files off: mogtool rebalance policy set '%s' && mogtool rebalance start\n", policy)
		fmt.Fprintf(e.stdout, "(or: mogtool drain --move %s)\n", strings.Join(idList, " "))
		return nil
	}
	if err := setRebalancePolicy(ctx, e.c, policy); err != nil {
		return fmt.Errorf("drain --move: %w", err)
	}
	if _, err := e.c.Do(ctx, "rebalance_start", nil); err != nil {
		return fmt.Errorf("drain --move: %w", err)
	}
	fmt.Fprintf(e.stdout, "rebalance started with policy %q\n", policy)
	if !*watchOn {
		return nil
	}
	if err := watch(ctx, e.stdout, *interval, rebalancePoll(e.c)); err != nil {
		return err
	}
	// The run is done, but a move that failed counted as done too.
	rs, err := getRebalStatus(ctx, e.c)
	if err != nil {
		return err
	}
	var left []int
	for _, id := range ids {
		if slices.Contains(rs.nonempty, id) {
			left = append(left, id)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("drain: %s %w; the tracker's log says why; the devices stay in drain", devNames(left), errNotEmpty)
	}
	return nil
}

// errNotEmpty: drain --move --watch saw the rebalance end with files it
// could not move off a device.
var errNotEmpty = errors.New("still holds files the rebalance could not move")

// devNames is "dev1,dev3".
func devNames(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = "dev" + strconv.Itoa(id)
	}
	return strings.Join(s, ",")
}

// errNoDevice: a devid the tracker does not list.
var errNoDevice = errors.New("no such device")

// deviceHosts maps each devid to its host's name, which set_state takes.
func deviceHosts(ctx context.Context, c *client.Client) (map[int]string, error) {
	hosts, err := c.GetHosts(ctx)
	if err != nil {
		return nil, err
	}
	names := map[int]string{}
	for _, h := range hosts {
		names[h.ID] = h.Name
	}
	devs, err := c.GetDevices(ctx)
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, d := range devs {
		out[d.ID] = names[d.HostID]
	}
	return out, nil
}
