package mogstored

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzParseReqPath: whatever a client sends as a path, an accepted one is
// a device directory and a relative path of plain segments that stays
// below it, in every encoding ("..", "%2e%2e", backslashes, NULs, dots).
func FuzzParseReqPath(f *testing.F) {
	for _, s := range []string{
		"/dev1/0/000/000/0000000001.fid", "//dev1//usage", "/dev1/../../etc/passwd", "/dev1/%2e%2e/x",
		"/dev1/.x", "/dev1/a\\..\\b", "/dev01/x", "/devx/y", "/", "", "dev1/x", "/dev1/\x00", "/dev1/./x", "/dev1/..%2f",
	} {
		f.Add(s)
	}
	docroot := f.TempDir()
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := parseReqPath(raw)
		if err != nil {
			return
		}
		if !isDevDir(p.dev) {
			t.Fatalf("parseReqPath(%q): device %q", raw, p.dev)
		}
		if p.rel != "." {
			for _, seg := range strings.Split(p.rel, "/") {
				if seg == "" || seg[0] == '.' || strings.ContainsAny(seg, "\\%\x00") {
					t.Fatalf("parseReqPath(%q): segment %q in %q", raw, seg, p.rel)
				}
			}
		}
		dev := filepath.Join(docroot, p.dev)
		if full := filepath.Join(dev, filepath.FromSlash(p.rel)); !within(dev, full) && full != dev {
			t.Fatalf("parseReqPath(%q) = %+v leads outside %s: %s", raw, p, dev, full)
		}
	})
}

// FuzzMgmtCommand sends any line to a running node's management port: the
// answer is one line (or nothing for an empty line), the node never stops
// but for "shutdown" (not sent here), and it goes on answering.
func FuzzMgmtCommand(f *testing.F) {
	for _, s := range []string{
		"size /dev1/0/000/000/0000000001.fid", "size /dev1/../../etc/passwd", "MD5 /dev1/x fsck", "SHA-1 /dev9/x",
		"MD5 /dev1/%2e%2e/x", "unknown thing", "!", "size", "size  /dev1/x", "MD5", "\x00", "SHUTDOWN_NOT", "watcher",
	} {
		f.Add(s)
	}
	s, docroot := startFuzzServer(f)
	os.WriteFile(filepath.Join(docroot, "dev1", "x"), []byte("x"), 0o644)
	var c net.Conn
	var br *bufio.Reader
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\r\n") || len(line) > maxMgmtLine-2 {
			return // one command per line; a long line is its own test
		}
		if _, shutdown := manageCommand(line); shutdown || watchCmd.MatchString(line) {
			return // stops the node / turns the connection into a stream
		}
		if c == nil {
			var err error
			if c, err = net.Dial("tcp", s.MgmtAddr()); err != nil {
				t.Fatal(err)
			}
			br = bufio.NewReader(c)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte(line + "\r\nsize /dev1/x\r\n")); err != nil {
			t.Fatal(err)
		}
		if line != "" { // an empty line is skipped without an answer
			l, err := br.ReadString('\n')
			if err != nil || !strings.HasSuffix(l, "\r\n") {
				t.Fatalf("%q: answer %q, %v", line, l, err)
			}
		}
		l, err := br.ReadString('\n')
		if err != nil || l != "/dev1/x 1\r\n" {
			t.Fatalf("after %q the node answers %q, %v", line, l, err)
		}
		select {
		case <-s.Done():
			t.Fatalf("%q stopped the node", line)
		default:
		}
	})
}

// startFuzzServer is startServer for a fuzz target.
func startFuzzServer(f *testing.F) (*Server, string) {
	docroot := f.TempDir()
	for _, d := range []string{"dev1", "dev2"} {
		if err := os.Mkdir(filepath.Join(docroot, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	cfg := DefaultConfig()
	cfg.DocRoot = docroot
	cfg.HTTPListen = "127.0.0.1:0"
	cfg.MgmtListen = "127.0.0.1:0"
	cfg.NoIOStat = true
	s := New(cfg)
	if err := s.Open(f.Context()); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	return s, docroot
}
