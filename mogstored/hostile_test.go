package mogstored

// Hostile clients (issue 10): writes from outside writenetworks, the usage
// file overwritten, shutdown from anyone, bodies that stop or trickle, and
// management connections that pile up or sit idle.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clientFrom is an HTTP client whose connections come from the loopback
// address local.
func clientFrom(local string) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 10 * time.Second}
}

func doWith(t *testing.T, c *http.Client, method, url, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

func TestHostile_WriteNetworks(t *testing.T) {
	s, docroot := startServer(t, func(c *Config) {
		c.WriteNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}
	})
	base := "http://" + s.HTTPAddr()
	outsider, insider := clientFrom("127.0.0.1"), clientFrom("127.0.0.2")
	for _, m := range []string{http.MethodPut, http.MethodDelete, "MKCOL"} {
		if got := doWith(t, outsider, m, base+"/dev1/x/f.fid", "evil"); got != http.StatusForbidden {
			t.Errorf("%s from outside writenetworks: %d; want 403", m, got)
		}
	}
	if _, err := os.Stat(filepath.Join(docroot, "dev1", "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused write left something: %v", err)
	}
	if got := doWith(t, insider, http.MethodPut, base+"/dev1/f.fid", "ok"); got != http.StatusOK {
		t.Fatalf("PUT from inside writenetworks: %d", got)
	}
	if got := doWith(t, outsider, http.MethodGet, base+"/dev1/f.fid", ""); got != http.StatusOK {
		t.Errorf("GET from outside writenetworks: %d; reads stay open to all", got)
	}
	if got := doWith(t, outsider, http.MethodDelete, base+"/dev1/f.fid", ""); got != http.StatusForbidden {
		t.Errorf("DELETE from outside writenetworks: %d; want 403", got)
	}
	if got := doWith(t, insider, http.MethodDelete, base+"/dev1/f.fid", ""); got != http.StatusNoContent {
		t.Errorf("DELETE from inside writenetworks: %d; want 204", got)
	}
}

// The usage file is the node's report to the trackers; a client could
// overwrite it and steer placement.
func TestHostile_UsageFileReadOnly(t *testing.T) {
	s, docroot := startServer(t, nil)
	usage := filepath.Join(docroot, "dev1", "usage")
	before, err := os.ReadFile(usage)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.HTTPAddr()
	for _, m := range []string{http.MethodPut, http.MethodDelete, "MKCOL"} {
		for _, u := range []string{"/dev1/usage", "//dev1//usage"} {
			if got := doWith(t, http.DefaultClient, m, base+u, "total: 1\nused: 0\n"); got != http.StatusForbidden {
				t.Errorf("%s %s: %d; want 403", m, u, got)
			}
		}
	}
	after, err := os.ReadFile(usage)
	if err != nil || string(after) != string(before) {
		t.Errorf("usage file changed: %q -> %q (%v)", before, after, err)
	}
	if got := doWith(t, http.DefaultClient, http.MethodGet, base+"/dev1/usage", ""); got != http.StatusOK {
		t.Errorf("GET usage: %d", got)
	}
}

func TestHostile_MgmtShutdownNetworks(t *testing.T) {
	s, _ := startServer(t, func(c *Config) {
		c.MgmtNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}
	})
	m := dialMgmt(t, s)
	for _, cmd := range []string{"shutdown", "shutdown graceful", "SHUTDOWN"} {
		if got := m.ask(cmd); !strings.HasPrefix(got, "ERROR: access denied") {
			t.Errorf("%q from outside mgmtnetworks: %q", cmd, got)
		}
	}
	if got := m.ask("size /dev1/nope"); got != "/dev1/nope -1\r\n" {
		t.Errorf("after refused shutdowns: %q", got)
	}
	select {
	case <-s.Done():
		t.Fatal("a refused shutdown stopped the node")
	default:
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	c, err := d.Dial("tcp", s.MgmtAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	in := &mgmtConn{t: t, c: c, r: bufio.NewReader(c)}
	if got := in.ask("shutdown"); got != "OK\r\n" {
		t.Errorf("shutdown from inside mgmtnetworks: %q", got)
	}
	select {
	case <-s.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("shutdown from inside mgmtnetworks did not stop the node")
	}
}

// A PUT body that stops, or trickles one byte at a time, is cut with 408
// once bodytimeout or minbodyrate says so, and leaves no temporary file.
func TestHostile_SlowBodies(t *testing.T) {
	const stall = 500 * time.Millisecond
	s, docroot := startServer(t, func(c *Config) {
		c.BodyTimeout = stall
		c.MinBodyRate = 1000
	})
	for _, c := range []struct {
		name  string
		every time.Duration // one byte this often; 0: stop after the first bytes
	}{{"stopped", 0}, {"trickle", stall / 5}} {
		t.Run(c.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", s.HTTPAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			start := time.Now()
			fmt.Fprintf(nc, "PUT /dev1/%s.fid HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nfirst", c.name)
			status := make(chan string, 1)
			go func() {
				nc.SetReadDeadline(time.Now().Add(30 * time.Second))
				l, _ := bufio.NewReader(nc).ReadString('\n')
				status <- strings.TrimSpace(l)
			}()
			var got string
			tick := time.NewTicker(max(c.every, time.Hour))
			defer tick.Stop()
		loop:
			for {
				select {
				case got = <-status:
					break loop
				case <-tick.C:
					nc.SetWriteDeadline(time.Now().Add(time.Second))
					io.WriteString(nc, "x")
				}
			}
			took := time.Since(start)
			if !strings.HasPrefix(got, "HTTP/1.1 408") {
				t.Fatalf("answer %q after %v; want 408", got, took)
			}
			// Cut once the bound is passed: stall for a stopped body, the
			// grace period (one stall) plus a read for a trickle.
			if took > 2*stall+5*time.Second {
				t.Errorf("cut after %v; bound is about %v", took, 2*stall)
			}
			waitFor(t, "the temporary file to go", func() bool { return len(listDir(t, filepath.Join(docroot, "dev1"))) <= 1 }) // usage only
		})
	}
	// An ordinary upload is unaffected.
	if res, _ := do(t, http.MethodPut, "http://"+s.HTTPAddr()+"/dev1/ok.fid", strings.NewReader(strings.Repeat("y", 1<<20)), nil); res.StatusCode != http.StatusOK {
		t.Errorf("ordinary PUT: %s", res.Status)
	}
}

// Management connections: beyond mgmtmaxconns they are refused; an idle one
// is closed after mgmtidletimeout.
func TestHostile_MgmtConnections(t *testing.T) {
	const max, idle = 20, 300 * time.Millisecond
	s, _ := startServer(t, func(c *Config) {
		c.MgmtMaxConns = max
		c.MgmtIdleTimeout = idle
	})
	var open []*mgmtConn
	for i := 0; i < max; i++ {
		m := dialMgmt(t, s)
		if got := m.ask("size /dev1/nope"); got != "/dev1/nope -1\r\n" {
			t.Fatalf("connection %d: %q", i, got)
		}
		open = append(open, m)
	}
	for i := 0; i < 5; i++ {
		m := dialMgmt(t, s)
		if got := m.readLine(); got != "ERROR: too many connections\r\n" {
			t.Errorf("connection %d over mgmtmaxconns: %q", max+i+1, got)
		}
	}
	// Idle ones are closed by the node: a read sees EOF.
	start := time.Now()
	for i, m := range open {
		m.c.SetReadDeadline(time.Now().Add(idle + 10*time.Second))
		if _, err := m.r.ReadByte(); !errors.Is(err, io.EOF) && !isReset(err) {
			t.Fatalf("idle connection %d after %v: %v; want closed", i, time.Since(start), err)
		}
	}
	// And their slots are free again.
	waitFor(t, "freed management slots", func() bool {
		c, err := net.Dial("tcp", s.MgmtAddr())
		if err != nil {
			return false
		}
		defer c.Close()
		io.WriteString(c, "size /dev1/nope\r\n")
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		l, _ := bufio.NewReader(c).ReadString('\n')
		return l == "/dev1/nope -1\r\n"
	})
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// One address cannot take every HTTP slot: beyond maxconnsperip it gets
// 503, other addresses still connect, and a closed connection frees its slot.
func TestHostile_HTTPConnsPerAddress(t *testing.T) {
	const per = 5
	s, _ := startServer(t, func(c *Config) { c.MaxConnsPerIP = per })
	var held []net.Conn
	for i := 0; i < per; i++ {
		c, err := net.Dial("tcp", s.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	// Accept runs asynchronously: the refusal comes once all five are in.
	waitFor(t, "the sixth connection to be refused", func() bool {
		return strings.HasPrefix(rawRequest(t, s.HTTPAddr(), "GET /dev1/usage HTTP/1.0\r\n\r\n"), "HTTP/1.0 503")
	})
	if got := doWith(t, clientFrom("127.0.0.2"), http.MethodGet, "http://"+s.HTTPAddr()+"/dev1/usage", ""); got != http.StatusOK {
		t.Errorf("GET from another address: %d", got)
	}
	held[0].Close()
	waitFor(t, "a freed slot", func() bool {
		return strings.HasPrefix(rawRequest(t, s.HTTPAddr(), "GET /dev1/usage HTTP/1.0\r\n\r\n"), "HTTP/1.0 200")
	})
}
