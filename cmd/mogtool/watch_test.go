package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomogile/gomogile/client"
)

func TestMeter(t *testing.T) {
	var m meter
	t0 := time.Unix(1700000000, 0)
	if _, _, ok := m.observe(t0, 10, 50); ok {
		t.Fatal("first sample gave a rate")
	}
	if _, _, ok := m.observe(t0.Add(time.Second), 10, 50); ok {
		t.Fatal("no progress gave a rate")
	}
	rate, eta, ok := m.observe(t0.Add(4*time.Second), 30, 50)
	if !ok || rate != 5 || eta != 4*time.Second {
		t.Fatalf("observe = %v, %v, %v; want 5/s, 4s, true", rate, eta, ok)
	}
	if _, eta, _ := m.observe(t0.Add(8*time.Second), 50, 50); eta != 0 {
		t.Fatalf("ETA at the end = %v; want 0", eta)
	}
}

func TestProgress(t *testing.T) {
	for _, c := range []struct {
		done, total int64
		rate        float64
		eta         time.Duration
		ok          bool
		want        string
	}{
		{3, 4, 1.5, 2400 * time.Millisecond, true, "3/4 fids (75.0%) 1.5/s ETA 2s"},
		{0, 0, 0, 0, false, "0/0 fids (-)"},
		{0, 80, 0, 0, false, "0/80 fids (0.0%)"},
		{90, 80, 3, 0, true, "90/80 fids (100.0%) 3.0/s ETA 0s"},
		{10, 1000, 0.1, 9900 * time.Second, true, "10/1000 fids (1.0%) 0.1/s ETA 2h45m0s"},
	} {
		if got := progress(c.done, c.total, "fids", c.rate, c.eta, c.ok); got != c.want {
			t.Errorf("progress(%d, %d, ...) = %q; want %q", c.done, c.total, got, c.want)
		}
	}
}

func TestLiveLine(t *testing.T) {
	var b bytes.Buffer
	l := &liveLine{w: &b, tty: true}
	l.show("abcdef")
	l.show("abc")
	l.end()
	l.end()
	if want := "\rabcdef\rabc   \n"; b.String() != want {
		t.Errorf("terminal output %q; want %q", b.String(), want)
	}
	// Cut one column short of a narrow terminal's edge, so it never wraps.
	b.Reset()
	l = &liveLine{w: &b, tty: true, width: 5}
	l.show("abcdef")
	l.show("ab")
	l.end()
	if want := "\rabcd\rab  \n"; b.String() != want {
		t.Errorf("narrow terminal output %q; want %q", b.String(), want)
	}
	b.Reset()
	l = &liveLine{w: &b}
	l.show("abcdef")
	l.show("abc")
	l.end()
	if want := "abcdef\nabc\n"; b.String() != want {
		t.Errorf("non-terminal output %q; want %q", b.String(), want)
	}
}

func TestTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	// The null device is a character device but no terminal.
	for name, out := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "file": f, "pipe": w, "null": null} {
		if ok, _ := terminal(out); ok {
			t.Errorf("terminal(%s) = true", name)
		}
	}
}

// A watched job that stops short of its end fails the command (exit 1),
// after printing its last line.
func TestWatch_Stopped(t *testing.T) {
	tr := startTracker(t, fixed(map[string]string{
		"fsck_status":      "OK running=0&host=&max_fid_checked=50&policy_only=0&end_fid=80&start_time=1700000000&stop_time=1700000090&current_time=1700000100&max_logid=3&queue_length=7&num_MISS=2",
		"server_setting":   "OK key=rebal_host&value=",
		"rebalance_status": "OK state=completed_devs%3D1+fids_queued%3D5+source_devs%3D2+time_finished%3D0+time_stopped%3D1700000100&queue_length=1",
	}))
	addr := "--trackers=" + tr.ln.Addr().String()

	out, _, err := run(t, nil, addr, "fsck", "status", "--watch", "--interval=10ms")
	if !errors.Is(err, errStopped) {
		t.Fatalf("fsck status --watch: %v; want errStopped", err)
	}
	if want := "fsck stopped: 50/80 fids (62.5%) | 7 queued | MISS=2\n"; out != want {
		t.Errorf("fsck printed %q; want %q", out, want)
	}
	wantExit1(t, err, "fsck stopped before it finished at fid 50 of 80")

	out, _, err = run(t, nil, addr, "rebalance", "status", "--watch", "--interval=10ms")
	if !errors.Is(err, errStopped) {
		t.Fatalf("rebalance status --watch: %v; want errStopped", err)
	}
	if want := "rebalance stopped: 4/5 fids (80.0%) | devices 1/2 | 0 B queued\n"; out != want {
		t.Errorf("rebalance printed %q; want %q", out, want)
	}
	wantExit1(t, err, "rebalance stopped before it finished")
	// rebal_host is read before the state, so that a run seen ended has
	// counted every move it queued.
	var order []string
	for _, l := range tr.Lines() {
		order = append(order, strings.Fields(l)[0])
	}
	if got := strings.Join(order[len(order)-2:], ","); got != "server_setting,rebalance_status" {
		t.Errorf("requests %s; want server_setting then rebalance_status", got)
	}
}

// A tracker error during --watch ends it with exit 1 and the tracker's
// message; an interrupt ends it with errInterrupted.
func TestWatch_ErrorAndInterrupt(t *testing.T) {
	var polls atomic.Int32
	tr := startTracker(t, func(cmd, line string) string {
		if polls.Add(1) > 2 {
			return "ERR failure Database+went+away"
		}
		return "OK running=1&host=h&max_fid_checked=1&end_fid=10&queue_length=0"
	})
	addr := "--trackers=" + tr.ln.Addr().String()
	out, _, err := run(t, nil, addr, "fsck", "status", "--watch", "--interval=10ms")
	if !errors.Is(err, client.ErrFailure) {
		t.Fatalf("watch over a failing tracker: %v; want ErrFailure", err)
	}
	wantExit1(t, err, "Database went away")
	if n := strings.Count(out, "fsck running: 1/10 fids (10.0%)"); n != 2 {
		t.Errorf("printed %q; want two progress lines", out)
	}

	polls.Store(-1 << 20)
	ctx, cancel := context.WithCancel(t.Context())
	m := &Main{Getenv: func(string) string { return "" }}
	var buf syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- m.Run(ctx, []string{addr, "fsck", "status", "--watch", "--interval=10ms"}, &buf, &bytes.Buffer{})
	}()
	waitUntil(t, "a progress line", func() bool { return strings.Contains(buf.String(), "fsck running") })
	cancel()
	err = <-done
	if !errors.Is(err, errInterrupted) {
		t.Fatalf("interrupted watch: %v; want errInterrupted", err)
	}
	wantExit1(t, err, "the job goes on on the tracker")
}

// A job marked done while fids still wait in its queue is watched until
// the queue is empty: the last checks and moves are part of the job.
func TestWatch_WaitsForQueue(t *testing.T) {
	var n atomic.Int32
	tr := startTracker(t, func(cmd, line string) string {
		q := "2"
		if cmd == "server_setting" || n.Add(1) > 2 {
			q = "0"
		}
		switch cmd {
		case "server_setting":
			return "OK key=rebal_host&value="
		case "rebalance_status":
			return "OK state=completed_devs%3D1+fids_queued%3D4+bytes_queued%3D2048+source_devs%3D+time_finished%3D1700000100&queue_length=" + q
		}
		return "OK running=0&max_fid_checked=80&end_fid=80&queue_length=" + q
	})
	addr := "--trackers=" + tr.ln.Addr().String()
	out, _, err := run(t, nil, addr, "rebalance", "status", "--watch", "--interval=10ms")
	if err != nil {
		t.Fatal(err)
	}
	want := "rebalance finishing: 2/4 fids (50.0%) | devices 1/1 | 2.0 KB queued\n" +
		"rebalance finishing: 2/4 fids (50.0%) | devices 1/1 | 2.0 KB queued\n" +
		"rebalance done: 4/4 fids (100.0%) "
	if !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 3 {
		t.Errorf("rebalance printed\n%s\nwant\n%s...", out, want)
	}

	n.Store(0)
	out, _, err = run(t, nil, addr, "fsck", "status", "--watch", "--interval=10ms")
	if err != nil {
		t.Fatal(err)
	}
	want = "fsck finishing: 80/80 fids (100.0%) | 2 queued\n" +
		"fsck finishing: 80/80 fids (100.0%) | 2 queued\n" +
		"fsck done: 80/80 fids (100.0%) | 0 queued\n"
	if out != want {
		t.Errorf("fsck printed\n%s\nwant\n%s", out, want)
	}
}
