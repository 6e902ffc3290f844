package tracker_test

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/tracker"
	"github.com/gomogile/gomogile/tracker/jobs"
)

// TestOperatorScript drives testdata/operator-script.txt — !want, !jobs,
// !to, !watch, clear_cache as an operator types them — against our
// tracker and compares the normalised transcript with
// testdata/original-2.73-jobs.txt, the same script's transcript taken from
// the original 2.73 tracker (see testdata/README.md).
//
// operator-nojobmaster-script.txt is the same for a tracker started with
// --no-job_master, compared with original-2.73-nojobmaster.txt.
//
// With GOMOGILE_OPERATOR_TRACKER=<host:port>,
// GOMOGILE_OPERATOR_SCRIPT=<script's file name> and
// GOMOGILE_OPERATOR_NODES=<ip:port>,<ip:port> (the HTTP addresses of two
// storage nodes on 127.0.0.2 and 127.0.0.3, the tracker's database empty)
// it drives that tracker with that script instead, writes the transcript
// to GOMOGILE_OPERATOR_OUT and compares nothing: that is how the recording
// was made, and how one diffs any tracker against it by hand.
func TestOperatorScript(t *testing.T) {
	for _, tc := range []struct {
		name, script, recording string
		jobMaster               bool
	}{
		{"job_master", "operator-script.txt", "original-2.73-jobs.txt", true},
		{"no-job_master", "operator-nojobmaster-script.txt", "original-2.73-nojobmaster.txt", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			operatorScript(t, "testdata/"+tc.script, "testdata/"+tc.recording, tc.jobMaster)
		})
	}
}

func operatorScript(t *testing.T, scriptFile, recording string, jobMaster bool) {
	script := readScript(t, scriptFile)
	if addr := os.Getenv("GOMOGILE_OPERATOR_TRACKER"); addr != "" {
		if os.Getenv("GOMOGILE_OPERATOR_SCRIPT") != filepath.Base(scriptFile) {
			t.Skip("GOMOGILE_OPERATOR_SCRIPT names another script")
		}
		nodes := strings.Split(os.Getenv("GOMOGILE_OPERATOR_NODES"), ",")
		out := os.Getenv("GOMOGILE_OPERATOR_OUT")
		if len(nodes) != 2 || out == "" {
			t.Fatal("GOMOGILE_OPERATOR_TRACKER needs GOMOGILE_OPERATOR_NODES=<ip:port>,<ip:port> and GOMOGILE_OPERATOR_OUT=<file>")
		}
		got := drive(t, addr, nodes, script)
		if err := os.WriteFile(out, []byte(formatTranscript(script, got)), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}

	n2 := startNode(t, "127.0.0.2", 1)
	n3 := startNode(t, "127.0.0.3", 2)
	st := openStore(t, testDSN(t))
	cfg := testConfig()
	cfg.JobMaster = jobMaster
	cfg.QueryJobs = 2
	o := tracker.JobsOptions(cfg)
	o.Hostname = "testhost"
	o.MonitorInterval = 100 * time.Millisecond
	o.QueuePoll = 50 * time.Millisecond
	o.HTTPClient = http.DefaultClient
	o.Logger = quietLogger()
	tt := startTracker(t, cfg, st, &tracker.Options{Jobs: jobs.New(st, o), Hostname: "testhost"})
	got := drive(t, tt.addr, []string{"127.0.0.2:" + n2.port, "127.0.0.3:" + n3.port}, script)

	want := readTranscript(t, recording)
	if len(want) != len(script) {
		t.Fatalf("%s has %d steps, %s %d: record it again", recording, len(want), scriptFile, len(script))
	}
	for i, s := range script {
		w := want[i]
		if w.line != s.line {
			t.Fatalf("%s:%d: recorded %q where the script has %q: record it again", recording, w.lineno, w.line, s.line)
		}
		compareReplies(t, w.lineno, s.line, got[i], w.replies)
	}
}

// scriptStep is one line of operator-script.txt: a request ("> "), an
// action ("@"), or a comment kept for the transcript.
type scriptStep struct {
	line     string
	comments []string // the comment lines before it
}

func readScript(t *testing.T, name string) []scriptStep {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var steps []scriptStep
	var comments []string
	for no, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
			comments = append(comments, l)
		case strings.HasPrefix(l, "> "), strings.HasPrefix(l, "@"):
			steps = append(steps, scriptStep{line: strings.TrimPrefix(l, "> "), comments: comments})
			comments = nil
		default:
			t.Fatalf("%s:%d: bad line %q", name, no+1, l)
		}
	}
	return steps
}

// formatTranscript writes the script with each step's reply lines, in the
// format readTranscript reads.
func formatTranscript(script []scriptStep, replies [][]string) string {
	var b strings.Builder
	for i, s := range script {
		for _, c := range s.comments {
			b.WriteString(c + "\n")
		}
		if strings.HasPrefix(s.line, "@") {
			b.WriteString(s.line + "\n")
		} else {
			b.WriteString("> " + s.line + "\n")
		}
		for _, r := range replies[i] {
			b.WriteString("< " + r + "\n")
		}
	}
	return b.String()
}

// Normalisation of admin replies and !watch lines: pids differ from run to
// run (and ours are all the tracker's own).
var (
	pidsLine  = regexp.MustCompile(`^(\S+ pids)((?: \d+)*)$`)
	jobPid    = regexp.MustCompile(`\[(\w+)\(\d+\)\]`)
	childPid  = regexp.MustCompile(`^:: Child \d+ `)
	anyNumber = regexp.MustCompile(`\d+`)
)

func normaliseAdmin(l string) string {
	if m := pidsLine.FindStringSubmatch(l); m != nil {
		return m[1] + anyNumber.ReplaceAllString(m[2], "<pid>")
	}
	return l
}

// normaliseWatch also replaces ports, the node ports and the closed one,
// where a line names them alone ("Port 7500 not listening ...").
func normaliseWatch(l string, ports []string) string {
	l = jobPid.ReplaceAllString(l, "[$1(<pid>)]")
	l = childPid.ReplaceAllString(l, ":: Child <pid> ")
	l = nodePort.ReplaceAllString(l, "$1:<port>")
	for _, p := range ports {
		l = strings.ReplaceAll(l, " "+p+" ", " <port> ")
	}
	return l
}

// drive runs script against the tracker at addr with the storage nodes at
// nodes and returns each step's normalised reply lines.
func drive(t *testing.T, addr string, nodes []string, script []scriptStep) [][]string {
	t.Helper()
	c := dialAddr(t, addr)
	n := &normaliser{fids: map[string]int{}}
	vars := map[string]string{"closedport": closedPort(t, "127.0.0.4")}
	for i, a := range nodes {
		_, vars["port"+itoa(i+2)], _ = net.SplitHostPort(a)
	}
	var watch chan string // lines of the !watch connection
	var wc *lineConn
	out := make([][]string, len(script))
	for i, s := range script {
		if !strings.HasPrefix(s.line, "@") {
			// A !watch step is about what this request causes: what
			// the stream said before it is stale.
			for drained := false; watch != nil && !drained; {
				select {
				case <-watch:
				default:
					drained = true
				}
			}
			req := substitute(s.line, vars, n)
			if strings.HasPrefix(req, "!") {
				out[i] = adminLines(c, req)
			} else {
				out[i] = []string{n.normalise(s.line, c.do(req))}
				if strings.HasPrefix(s.line, "create_open ") && strings.HasPrefix(out[i][0], "OK ") {
					vars["fid"], vars["devid"], vars["path"] = n.open.fid, n.open.devid, n.open.path
				}
			}
			continue
		}
		f := strings.Fields(s.line)
		switch f[0] {
		case "@watch":
			if wc == nil {
				wc = dialAddr(t, addr)
				out[i] = adminLines(wc, "!watch")
				watch = make(chan string, 1000)
				go func() {
					for {
						wc.nc.SetReadDeadline(time.Now().Add(time.Hour))
						l, err := wc.br.ReadString('\n')
						if err != nil {
							close(watch)
							return
						}
						watch <- strings.TrimRight(l, "\r\n")
					}
				}()
			} else {
				// The stream goes on until the reply; skip its lines.
				wc.send("!watch\r\n")
				deadline := time.After(20 * time.Second)
				for done := false; !done; {
					select {
					case l, ok := <-watch:
						if !ok {
							t.Fatalf("!watch connection closed")
						}
						if !strings.HasPrefix(l, ":: ") {
							out[i] = append(out[i], l)
							done = l == "."
						}
					case <-deadline:
						t.Fatalf("no reply to the second !watch")
					}
				}
			}
		case "@watch_for":
			what := strings.TrimPrefix(s.line, "@watch_for ")
			deadline := time.After(15 * time.Second)
			for out[i] == nil {
				select {
				case l, ok := <-watch:
					if !ok {
						t.Fatalf("!watch connection closed")
					}
					if strings.Contains(l, what) {
						out[i] = []string{normaliseWatch(l, []string{vars["closedport"], vars["port2"], vars["port3"]})}
					}
				case <-deadline:
					// Reported by the comparison, with the other steps.
					out[i] = []string{"(no such line in 15s)"}
				}
			}
		case "@wait_jobs":
			want := f[1] + " count " + f[2]
			waitFor(t, 30*time.Second, want, func() bool {
				for _, l := range adminLines(c, "!jobs") {
					if l == want {
						return true
					}
				}
				// Never listed counts as none.
				return f[2] == "0" && !strings.Contains(strings.Join(adminLines(c, "!jobs"), "\n"), f[1]+" count ")
			})
		default:
			runAction(t, c, n, s.line)
		}
	}
	return out
}

func dialAddr(t *testing.T, addr string) *lineConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { nc.Close() })
	return &lineConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// adminLines sends an admin command and returns its reply lines up to and
// including ".", normalised.
func adminLines(c *lineConn, req string) []string {
	c.send(req + "\r\n")
	var got []string
	for {
		l := strings.TrimRight(c.readLine(), "\r\n")
		got = append(got, normaliseAdmin(l))
		if l == "." {
			return got
		}
	}
}

// closedPort is a port nothing listens on at ip, for a device that cannot
// be reached.
func closedPort(t *testing.T, ip string) string {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	return p
}
