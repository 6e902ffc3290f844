package mogstored

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startServer runs a Server on 127.0.0.1:0 over a fresh docroot holding
// dev1 and dev2, closed when the test ends.
func startServer(t *testing.T, mutate func(*Config)) (*Server, string) {
	t.Helper()
	docroot := t.TempDir()
	for _, d := range []string{"dev1", "dev2"} {
		if err := os.Mkdir(filepath.Join(docroot, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := DefaultConfig()
	cfg.DocRoot = docroot
	cfg.HTTPListen = "127.0.0.1:0"
	cfg.MgmtListen = "127.0.0.1:0"
	if mutate != nil {
		mutate(&cfg)
	}
	s := New(cfg)
	s.iostatInterval = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Open(ctx); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, docroot
}

func do(t *testing.T, method, url string, body io.Reader, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return res, string(b)
}

// rawRequest sends raw bytes on a new connection and returns the status line
// of the answer ("" if the server closed without one).
func rawRequest(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

// mgmtConn is a line client for the management port.
type mgmtConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialMgmt(t *testing.T, s *Server) *mgmtConn {
	t.Helper()
	c, err := net.Dial("tcp", s.MgmtAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &mgmtConn{t: t, c: c, r: bufio.NewReader(c)}
}

func (m *mgmtConn) send(line string) {
	m.t.Helper()
	m.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(m.c, line+"\r\n"); err != nil {
		m.t.Fatalf("send %q: %v", line, err)
	}
}

func (m *mgmtConn) readLine() string {
	m.t.Helper()
	m.c.SetDeadline(time.Now().Add(10 * time.Second))
	l, err := m.r.ReadString('\n')
	if err != nil {
		m.t.Fatalf("reading reply: %v (got %q)", err, l)
	}
	return l
}

func (m *mgmtConn) ask(line string) string {
	m.t.Helper()
	m.send(line)
	return m.readLine()
}

// listDir returns every name below dir, relative, for "nothing else was
// written" checks.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel != "." {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
