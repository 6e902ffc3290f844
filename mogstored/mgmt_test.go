package mogstored

import (
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestMgmtSize(t *testing.T) {
	s, docroot := startServer(t, nil)
	os.MkdirAll(filepath.Join(docroot, "dev1", "0", "000", "000"), 0o755)
	os.WriteFile(filepath.Join(docroot, filepath.FromSlash(fidPath)), []byte("hello world"), 0o644)
	m := dialMgmt(t, s)

	for _, c := range []struct{ cmd, want string }{
		{"size " + fidPath, fidPath + " 11\r\n"},
		{"size /dev1/0/000/000/0000000999.fid", "/dev1/0/000/000/0000000999.fid -1\r\n"},
		{"size /dev7/x", "/dev7/x -1\r\n"},
		{"size /dev1/0", "/dev1/0 -1\r\n"},
		{"size /dev1/../../etc/passwd", "ERROR: uri invalid (contains ..)\r\n"},
	} {
		if got := m.ask(c.cmd); got != c.want {
			t.Errorf("%q answered %q, want %q", c.cmd, got, c.want)
		}
	}
	// Pipelined commands are answered in order.
	m.send("size " + fidPath + "\r\nsize /dev1/nope\r\nsize " + fidPath)
	for _, want := range []string{fidPath + " 11\r\n", "/dev1/nope -1\r\n", fidPath + " 11\r\n"} {
		if got := m.readLine(); got != want {
			t.Errorf("pipelined answer %q, want %q", got, want)
		}
	}
}

func TestMgmtDigest(t *testing.T) {
	s, docroot := startServer(t, nil)
	content := []byte(strings.Repeat("digest me ", 300000)) // > 1 MiB: several reads
	os.MkdirAll(filepath.Join(docroot, "dev1", "0", "000", "000"), 0o755)
	os.WriteFile(filepath.Join(docroot, filepath.FromSlash(fidPath)), content, 0o644)
	md := md5.Sum(content)
	sh := sha1.Sum(content)
	m := dialMgmt(t, s)

	for _, c := range []struct{ cmd, want string }{
		{"MD5 " + fidPath, fidPath + " MD5=" + hex.EncodeToString(md[:]) + "\r\n"},
		{"MD5 " + fidPath + " fsck", fidPath + " MD5=" + hex.EncodeToString(md[:]) + "\r\n"},
		{"SHA-1 " + fidPath + " fsck", fidPath + " SHA-1=" + hex.EncodeToString(sh[:]) + "\r\n"},
		{"MD5 /dev1/missing.fid", "/dev1/missing.fid MD5=-1\r\n"},
		{"SHA-1 /dev9/x fsck", "/dev9/x SHA-1=-1\r\n"},
		{"MD5 /dev1/../x", "ERROR: uri invalid (contains ..)\r\n"},
	} {
		got := m.ask(c.cmd)
		if got != c.want {
			t.Errorf("%q answered %q, want %q", c.cmd, got, c.want)
		}
	}
	// MogileFS::HTTPFile::digest_mgmt's parse of a success.
	got := m.ask("MD5 " + fidPath)
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(fidPath) + ` MD5=([a-f0-9]{32,128})\r\n`)
	if !re.MatchString(got) {
		t.Errorf("tracker's regexp does not match %q", got)
	}
}

func TestMgmtFsckDigestsQueuePerDevice(t *testing.T) {
	s, docroot := startServer(t, nil)
	os.WriteFile(filepath.Join(docroot, "dev1", "a"), []byte("a"), 0o644)
	// Hold dev1's fsck slot as a running digest would.
	q := s.fsckQueue("dev1")
	q <- struct{}{}
	m := dialMgmt(t, s)
	m.send("MD5 /dev1/a fsck")
	m.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := m.r.ReadString('\n'); err == nil {
		t.Fatal("fsck digest ran while the device's slot was taken")
	}
	// Non-fsck digests and other devices are not queued.
	other := dialMgmt(t, s)
	if got := other.ask("MD5 /dev1/a"); !strings.HasPrefix(got, "/dev1/a MD5=") {
		t.Fatalf("plain digest answered %q", got)
	}
	<-q
	if got := m.readLine(); !strings.HasPrefix(got, "/dev1/a MD5=") {
		t.Fatalf("queued fsck digest answered %q", got)
	}
}

func TestMgmtUnknownAndSymlink(t *testing.T) {
	s, docroot := startServer(t, nil)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644)
	mustSymlink(t, outside, filepath.Join(docroot, "dev1", "out"))
	m := dialMgmt(t, s)
	for _, c := range []struct{ cmd, want string }{
		{"foo bar", "ERROR: unknown command: foo\r\n"},
		{"FROB", "ERROR: unknown command: frob\r\n"},
		{"size", "ERROR: unknown command: size\r\n"},
		{"!!", "ERROR: invalid command\r\n"},
		{"shutdown now please", "ERROR: usage: shutdown [graceful]\r\n"},
		{"size /dev1/out/secret", "ERROR: path escapes the device directory\r\n"},
		{"MD5 /dev1/out/secret", "ERROR: path escapes the device directory\r\n"},
	} {
		if got := m.ask(c.cmd); got != c.want {
			t.Errorf("%q answered %q, want %q", c.cmd, got, c.want)
		}
	}
	m.send(strings.Repeat("x", maxMgmtLine+10))
	if got := m.readLine(); got != "ERROR: line too long\r\n" {
		t.Errorf("over-long line answered %q", got)
	}
}

func TestMgmtWatch(t *testing.T) {
	s, _ := startServer(t, nil)
	if !s.iostat.available() {
		t.Skip("no /proc/diskstats here")
	}
	m := dialMgmt(t, s)
	m.send("watch")
	// One report: a line per device in numeric order, then ".".
	var lines []string
	for {
		l := m.readLine()
		if l == ".\n" {
			break
		}
		lines = append(lines, l)
	}
	if len(lines) != 2 {
		t.Fatalf("report lines %q, want one per device", lines)
	}
	re := regexp.MustCompile(`^(\d+)\t(-|\d+\.\d\d)\n$`)
	for i, l := range lines {
		mm := re.FindStringSubmatch(l)
		if mm == nil || mm[1] != []string{"1", "2"}[i] {
			t.Errorf("report line %q", l)
		}
	}
	// Reports keep coming.
	if l := m.readLine(); !re.MatchString(l) {
		t.Errorf("second report starts with %q", l)
	}
}

func TestMgmtWatchDisabled(t *testing.T) {
	s, _ := startServer(t, func(c *Config) { c.NoIOStat = true })
	m := dialMgmt(t, s)
	if got := m.ask("watch"); got != "ERR iostat unavailable\r\n" {
		t.Fatalf("watch without iostat answered %q", got)
	}
	// The connection still takes commands.
	if got := m.ask("size /dev1/none"); got != "/dev1/none -1\r\n" {
		t.Fatalf("after watch: %q", got)
	}
}

func TestMgmtShutdown(t *testing.T) {
	s, _ := startServer(t, nil)
	m := dialMgmt(t, s)
	if got := m.ask("shutdown graceful"); got != "OK\r\n" {
		t.Fatalf("shutdown answered %q", got)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop after shutdown")
	}
	if _, err := net.DialTimeout("tcp", s.HTTPAddr(), time.Second); err == nil {
		t.Error("HTTP still accepting after shutdown")
	}
}

func TestCloseDisconnectsMgmtClients(t *testing.T) {
	s, _ := startServer(t, nil)
	idle := dialMgmt(t, s)
	watcher := dialMgmt(t, s)
	watcher.send("watch")
	idle.ask("size /dev1/x") // make sure it is being served
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*mgmtConn{idle, watcher} {
		m.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := io.ReadAll(m.r)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Error("mgmt connection still open after Close")
		}
	}
}
