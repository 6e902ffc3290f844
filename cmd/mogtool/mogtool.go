package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gomogile/gomogile/client"
)

// DefaultTrackers is used when neither --trackers nor $MOGTOOL_TRACKERS
// is set.
const DefaultTrackers = "127.0.0.1:7001"

// Main runs mogtool. Its fields let tests supply what main takes from the
// process.
type Main struct {
	// Stdin is read by "upload -" (os.Stdin if nil).
	Stdin io.Reader
	// Getenv reads MOGTOOL_TRACKERS (os.Getenv if nil).
	Getenv func(string) string
}

// NewMain returns a Main reading the process's stdin and environment.
func NewMain() *Main {
	return &Main{Stdin: os.Stdin, Getenv: os.Getenv}
}

// usageError is a mistake in the command line (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error {
	return &usageError{msg: fmt.Sprintf(format, a...)}
}

// env is what every command gets.
type env struct {
	c      *client.Client
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

type command struct {
	name  string
	usage string
	run   func(ctx context.Context, e *env, args []string) error
}

// commands lists the subcommands in the order "help" shows them.
var commands []command

func init() {
	commands = []command{
		{"upload", "upload --domain D --key K [--class C] [--md5] FILE|-", cmdUpload},
		{"fetch", "fetch --domain D --key K [-o FILE]", cmdFetch},
		{"delete", "delete --domain D --key K", cmdDelete},
		{"rename", "rename --domain D --from K1 --to K2", cmdRename},
		{"info", "info --domain D --key K", cmdInfo},
		{"list", "list --domain D [--prefix P] [--after K] [--limit N]", cmdList},
		{"domain", "domain add NAME | delete NAME | list", cmdDomain},
		{"class", "class add|modify DOMAIN CLASS [--mindevcount N] [--replpolicy P] [--hashtype MD5|SHA-1|NONE] | delete DOMAIN CLASS | list", cmdClass},
		{"host", "host add|modify NAME [--ip IP] [--port N] [--getport N] [--altip IP] [--altmask NET] [--status S] | delete NAME | list", cmdHost},
		{"device", "device add HOST DEVID [--state S] | list | mark HOST DEVID STATE | weight HOST DEVID WEIGHT", cmdDevice},
		{"settings", "settings list | get KEY | set KEY VALUE", cmdSettings},
		{"replicate-now", "replicate-now", cmdReplicateNow},
		{"fsck", "fsck start | stop | status [--watch] [--interval DUR] | reset [--policy-only] [--startpos FID] | clearlog | printlog | taillog [--interval DUR]", cmdFsck},
		{"rebalance", "rebalance start|status [--watch] [--interval DUR] | stop | reset | test | settings | policy show | policy set POLICY", cmdRebalance},
		{"drain", "drain [--move [--watch] [--interval DUR]] DEVID...   (stops new files only; drain -h says more)", cmdDrain},
		{"raw", "raw CMD [key=value ...]", cmdRaw},
		{"dump", "dump --dsn DSN [--dbuser U] [--dbpass P] | --config mogilefsd.conf  [-o FILE] [--digest]   (reads the database, not a tracker)", cmdDump},
		{"migrate", "migrate --from DSN|--from-config FILE --to DSN|--to-config FILE [--verify-only] [--source-quiesced] [--batch N]   (database to database)", cmdMigrate},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: mogtool [--trackers=HOST:PORT,...] [--domain=D] [--timeout=DUR] COMMAND [args]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands {
		fmt.Fprintln(w, "  "+c.usage)
	}
	fmt.Fprint(w, `
--watch follows a job on one progress line (counts, percent, rate, ETA),
redrawn in place on a terminal and printed once per --interval otherwise;
it exits 0 when the job is done, 1 if it stopped first or the tracker failed.
`)
	fmt.Fprintf(w, "\ntrackers default to $MOGTOOL_TRACKERS, else %s\n", DefaultTrackers)
}

// Run executes one mogtool command line (without the program name). Flag
// and argument mistakes return a *usageError; tracker refusals return the
// client's errors (a *client.Error for ERR replies).
func (m *Main) Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mogtool", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { usage(stderr) }
	trackers := fs.String("trackers", "", "comma-separated tracker addresses")
	domain := fs.String("domain", "", "default domain for file commands")
	timeout := fs.Duration("timeout", client.DefaultTimeout, "time limit for one tracker command")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{msg: err.Error()}
	}
	args = fs.Args()
	if len(args) == 0 {
		usage(stderr)
		return usagef("no command given")
	}
	if args[0] == "help" {
		usage(stdout)
		return nil
	}
	var cmd *command
	for i := range commands {
		if commands[i].name == args[0] {
			cmd = &commands[i]
		}
	}
	if cmd == nil {
		return usagef("unknown command %q (try mogtool help)", args[0])
	}

	getenv := m.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	c, err := client.New(client.ParseTrackers(trackerList(*trackers, getenv)), &client.Options{Domain: *domain, Timeout: *timeout})
	if err != nil {
		return usagef("%v", err)
	}
	defer c.Close()
	stdin := m.Stdin
	if stdin == nil {
		stdin = os.Stdin
	}
	return cmd.run(ctx, &env{c: c, stdin: stdin, stdout: stdout, stderr: stderr}, args[1:])
}

// trackerList picks the tracker list: the flag, else MOGTOOL_TRACKERS,
// else DefaultTrackers.
func trackerList(flagValue string, getenv func(string) string) string {
	if flagValue != "" {
		return flagValue
	}
	if v := getenv("MOGTOOL_TRACKERS"); v != "" {
		return v
	}
	return DefaultTrackers
}

// newFlags makes a command's flag set; errors go back to Run, never exit.
func newFlags(e *env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("mogtool "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

// parse parses flags given before, between or after positional arguments
// (mogadm style: "class add d c --mindevcount=2"); everything after "--"
// is positional. It checks the number of positional arguments.
func parse(fs *flag.FlagSet, args []string, minPos, maxPos int) ([]string, error) {
	var tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{msg: err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	pos = append(pos, tail...)
	if len(pos) < minPos || (maxPos >= 0 && len(pos) > maxPos) {
		want := strconv.Itoa(minPos)
		switch {
		case maxPos < 0:
			want = "at least " + want
		case maxPos != minPos:
			want += " to " + strconv.Itoa(maxPos)
		}
		return nil, usagef("%s: got %d arguments, want %s", fs.Name(), len(pos), want)
	}
	return pos, nil
}

func required(fs *flag.FlagSet, names ...string) error {
	for _, n := range names {
		if f := fs.Lookup(n); f != nil && f.Value.String() == "" {
			return usagef("%s: --%s is required", fs.Name(), n)
		}
	}
	return nil
}

func cmdUpload(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "upload")
	domain := fs.String("domain", "", "domain")
	key := fs.String("key", "", "key")
	class := fs.String("class", "", "class (default: the domain's default)")
	md5 := fs.Bool("md5", false, "send the MD5 and have the tracker verify it")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if err := required(fs, "key"); err != nil {
		return err
	}
	var r io.Reader = e.stdin
	size := int64(-1)
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if st.Mode().IsRegular() {
			size = st.Size()
		}
		r = f
	}
	n, err := e.c.StoreFileWith(ctx, *domain, *key, *class, r, size, &client.StoreOptions{ComputeMD5: *md5})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "stored %s (%d bytes)\n", *key, n)
	return nil
}

func cmdFetch(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "fetch")
	domain := fs.String("domain", "", "domain")
	key := fs.String("key", "", "key")
	out := fs.String("o", "", "write to this file instead of stdout")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if err := required(fs, "key"); err != nil {
		return err
	}
	rc, err := e.c.FetchFile(ctx, *domain, *key)
	if err != nil {
		return err
	}
	defer rc.Close()
	if *out == "" {
		_, err = io.Copy(e.stdout, rc)
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		// A truncated download must not pass for the file.
		os.Remove(*out)
		return fmt.Errorf("fetch %q: %w", *key, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(*out)
		return err
	}
	return nil
}

func cmdDelete(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "delete")
	domain := fs.String("domain", "", "domain")
	key := fs.String("key", "", "key")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if err := required(fs, "key"); err != nil {
		return err
	}
	return e.c.Delete(ctx, *domain, *key)
}

func cmdRename(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "rename")
	domain := fs.String("domain", "", "domain")
	from := fs.String("from", "", "current key")
	to := fs.String("to", "", "new key")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if err := required(fs, "from", "to"); err != nil {
		return err
	}
	return e.c.Rename(ctx, *domain, *from, *to)
}

func cmdInfo(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "info")
	domain := fs.String("domain", "", "domain")
	key := fs.String("key", "", "key")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	if err := required(fs, "key"); err != nil {
		return err
	}
	fi, err := e.c.FileInfo(ctx, *domain, *key)
	if err != nil {
		return err
	}
	paths, err := e.c.GetPaths(ctx, *domain, *key, nil)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 1, ' ', 0)
	fmt.Fprintf(tw, "key:\t%s\n", fi.Key)
	fmt.Fprintf(tw, "fid:\t%d\n", fi.FID)
	fmt.Fprintf(tw, "domain:\t%s\n", fi.Domain)
	fmt.Fprintf(tw, "class:\t%s\n", fi.Class)
	fmt.Fprintf(tw, "length:\t%d\n", fi.Length)
	fmt.Fprintf(tw, "devcount:\t%d\n", fi.DevCount)
	if fi.Checksum != "" {
		fmt.Fprintf(tw, "checksum:\t%s\n", fi.Checksum)
	}
	if len(fi.DevIDs) > 0 {
		ids := make([]string, len(fi.DevIDs))
		for i, id := range fi.DevIDs {
			ids[i] = strconv.Itoa(id)
		}
		fmt.Fprintf(tw, "devids:\t%s\n", strings.Join(ids, ","))
	}
	for i, p := range paths {
		fmt.Fprintf(tw, "path %d:\t%s\n", i+1, p)
	}
	return tw.Flush()
}

func cmdList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "list")
	domain := fs.String("domain", "", "domain")
	prefix := fs.String("prefix", "", "only keys starting with this")
	after := fs.String("after", "", "only keys after this one")
	limit := fs.Int("limit", 0, "stop after this many keys (0: all)")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	// The tracker returns at most 1000 keys a call; page with next_after.
	printed := 0
	next := *after
	for *limit == 0 || printed < *limit {
		page := 1000
		if *limit > 0 && *limit-printed < page {
			page = *limit - printed
		}
		keys, na, err := e.c.ListKeys(ctx, *domain, *prefix, next, page)
		if err != nil {
			return err
		}
		for _, k := range keys {
			fmt.Fprintln(e.stdout, k)
		}
		printed += len(keys)
		if len(keys) < page || na == "" || na == next {
			break
		}
		next = na
	}
	return nil
}

// sub splits "NOUN VERB args" and reports an unknown verb as usage.
func sub(noun string, args []string, verbs ...string) (string, []string, error) {
	if len(args) == 0 {
		return "", nil, usagef("%s: want one of %s", noun, strings.Join(verbs, ", "))
	}
	for _, v := range verbs {
		if args[0] == v {
			return v, args[1:], nil
		}
	}
	return "", nil, usagef("%s: unknown subcommand %q (want one of %s)", noun, args[0], strings.Join(verbs, ", "))
}

func cmdDomain(ctx context.Context, e *env, args []string) error {
	verb, args, err := sub("domain", args, "add", "delete", "list")
	if err != nil {
		return err
	}
	fs := newFlags(e, "domain "+verb)
	switch verb {
	case "add", "delete":
		pos, err := parse(fs, args, 1, 1)
		if err != nil {
			return err
		}
		if verb == "add" {
			return e.c.CreateDomain(ctx, pos[0])
		}
		return e.c.DeleteDomain(ctx, pos[0])
	}
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	doms, err := e.c.GetDomains(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "domain\tclasses")
	for _, d := range doms {
		names := make([]string, len(d.Classes))
		for i, c := range d.Classes {
			names[i] = c.Name
		}
		fmt.Fprintf(tw, "%s\t%s\n", d.Name, strings.Join(names, ","))
	}
	return tw.Flush()
}

func cmdClass(ctx context.Context, e *env, args []string) error {
	verb, args, err := sub("class", args, "add", "modify", "delete", "list")
	if err != nil {
		return err
	}
	fs := newFlags(e, "class "+verb)
	switch verb {
	case "add", "modify":
		mindev := fs.Int("mindevcount", 0, "copies to keep (add: default 2)")
		policy := fs.String("replpolicy", "", `replication policy, e.g. "MultipleHosts(2)"`)
		hash := fs.String("hashtype", "", "checksum type: MD5, SHA-1 or NONE")
		pos, err := parse(fs, args, 2, 2)
		if err != nil {
			return err
		}
		cl := client.Class{Name: pos[1], MinDevCount: *mindev, ReplPolicy: *policy, HashType: *hash}
		if verb == "modify" {
			return e.c.UpdateClass(ctx, pos[0], cl)
		}
		if cl.MinDevCount == 0 {
			cl.MinDevCount = 2 // mogadm's default
		}
		return e.c.CreateClass(ctx, pos[0], cl)
	case "delete":
		pos, err := parse(fs, args, 2, 2)
		if err != nil {
			return err
		}
		return e.c.DeleteClass(ctx, pos[0], pos[1])
	}
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	doms, err := e.c.GetDomains(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "domain\tclass\tmindevcount\treplpolicy\thashtype")
	for _, d := range doms {
		for _, c := range d.Classes {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", d.Name, c.Name, c.MinDevCount, c.ReplPolicy, c.HashType)
		}
	}
	return tw.Flush()
}

func cmdHost(ctx context.Context, e *env, args []string) error {
	verb, args, err := sub("host", args, "add", "modify", "delete", "list")
	if err != nil {
		return err
	}
	fs := newFlags(e, "host "+verb)
	switch verb {
	case "add", "modify":
		h := client.Host{}
		fs.StringVar(&h.IP, "ip", "", "IP address")
		fs.IntVar(&h.Port, "port", 0, "HTTP port (add: default 7500)")
		fs.IntVar(&h.GetPort, "getport", 0, "separate HTTP port for reads")
		fs.StringVar(&h.AltIP, "altip", "", "alternate IP")
		fs.StringVar(&h.AltMask, "altmask", "", "network of clients that use the alternate IP")
		fs.StringVar(&h.Status, "status", "", "alive, down, dead or readonly")
		pos, err := parse(fs, args, 1, 1)
		if err != nil {
			return err
		}
		h.Name = pos[0]
		if verb == "modify" {
			return e.c.UpdateHost(ctx, h)
		}
		if h.IP == "" {
			return usagef("host add: --ip is required")
		}
		if h.Port == 0 {
			h.Port = 7500 // mogstored's port
		}
		id, err := e.c.CreateHost(ctx, h)
		if err != nil {
			return err
		}
		if id > 0 {
			fmt.Fprintf(e.stdout, "host %s has id %d\n", h.Name, id)
		}
		return nil
	case "delete":
		pos, err := parse(fs, args, 1, 1)
		if err != nil {
			return err
		}
		return e.c.DeleteHost(ctx, pos[0])
	}
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	hosts, err := e.c.GetHosts(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "id\thost\tip\tport\tgetport\tstatus\taltip\taltmask")
	for _, h := range hosts {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", h.ID, h.Name, h.IP, h.Port, optInt(h.GetPort), h.Status, h.AltIP, h.AltMask)
	}
	return tw.Flush()
}

func optInt(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

func atoiArg(what, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, usagef("%s must be a non-negative number, not %q", what, s)
	}
	return n, nil
}

func cmdDevice(ctx context.Context, e *env, args []string) error {
	verb, args, err := sub("device", args, "add", "list", "mark", "weight")
	if err != nil {
		return err
	}
	fs := newFlags(e, "device "+verb)
	switch verb {
	case "add":
		state := fs.String("state", "", "initial state (tracker default: alive)")
		pos, err := parse(fs, args, 2, 2)
		if err != nil {
			return err
		}
		devid, err := atoiArg("DEVID", pos[1])
		if err != nil {
			return err
		}
		return e.c.CreateDevice(ctx, client.NewDevice{HostName: pos[0], DevID: devid, State: *state})
	case "mark", "weight":
		pos, err := parse(fs, args, 3, 3)
		if err != nil {
			return err
		}
		devid, err := atoiArg("DEVID", pos[1])
		if err != nil {
			return err
		}
		if verb == "mark" {
			return e.c.SetState(ctx, pos[0], devid, pos[2])
		}
		w, err := atoiArg("WEIGHT", pos[2])
		if err != nil {
			return err
		}
		return e.c.SetWeight(ctx, pos[0], devid, w)
	}
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	hosts, err := e.c.GetHosts(ctx)
	if err != nil {
		return err
	}
	names := map[int]string{}
	for _, h := range hosts {
		names[h.ID] = h.Name
	}
	devs, err := e.c.GetDevices(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "devid\thost\tstatus\tobserved\tweight\tmb_used\tmb_total\tmb_free")
	for _, d := range devs {
		host := names[d.HostID]
		if host == "" {
			host = "#" + strconv.Itoa(d.HostID)
		}
		fmt.Fprintf(tw, "dev%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", d.ID, host, d.Status, d.ObservedState, d.Weight, d.MBUsed, d.MBTotal, d.MBFree)
	}
	return tw.Flush()
}

func cmdSettings(ctx context.Context, e *env, args []string) error {
	verb, args, err := sub("settings", args, "list", "get", "set")
	if err != nil {
		return err
	}
	fs := newFlags(e, "settings "+verb)
	switch verb {
	case "get":
		pos, err := parse(fs, args, 1, 1)
		if err != nil {
			return err
		}
		v, err := e.c.ServerSetting(ctx, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, v)
		return nil
	case "set":
		pos, err := parse(fs, args, 2, 2)
		if err != nil {
			return err
		}
		return e.c.SetServerSetting(ctx, pos[0], pos[1])
	}
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	ss, err := e.c.ServerSettings(ctx)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(ss))
	for k := range ss {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\n", k, ss[k])
	}
	return tw.Flush()
}

func cmdReplicateNow(ctx context.Context, e *env, args []string) error {
	if _, err := parse(newFlags(e, "replicate-now"), args, 0, 0); err != nil {
		return err
	}
	n, err := e.c.ReplicateNow(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%d files queued for replication now\n", n)
	return nil
}

// cmdRaw sends any command and prints the reply's arguments decoded, one
// "key=value" per line in key order, or "OK" for a reply without any.
// Line breaks in keys and values are shown as \r and \n, so the output
// stays one pair per line.
func cmdRaw(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usagef("raw: usage: raw CMD [key=value ...]")
	}
	cmd := args[0]
	v := url.Values{}
	for _, a := range args[1:] {
		k, val, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return usagef("raw: argument %q is not key=value", a)
		}
		v.Add(k, val)
	}
	reply, err := e.c.Do(ctx, cmd, v)
	if err != nil {
		return err
	}
	if len(reply) == 0 {
		fmt.Fprintln(e.stdout, "OK")
		return nil
	}
	keys := make([]string, 0, len(reply))
	for k := range reply {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	nl := strings.NewReplacer("\r", `\r`, "\n", `\n`)
	for _, k := range keys {
		for _, val := range reply[k] {
			fmt.Fprintf(e.stdout, "%s=%s\n", nl.Replace(k), nl.Replace(val))
		}
	}
	return nil
}
