package mogstored

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func testMain(t *testing.T) (*Main, *bytes.Buffer) {
	var out bytes.Buffer
	m := NewMain()
	m.Stdout, m.Stderr = &out, &out
	m.DefaultConfigFile = filepath.Join(t.TempDir(), "absent.conf")
	return m, &out
}

func writeConf(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mogstored.conf")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseFlags(t *testing.T) {
	conf := writeConf(t, "docroot = /from/file\nhttplisten = 127.0.0.1:1111\nmaxconns = 7\ndaemonize = 1\npidfile = /file.pid\n")

	t.Run("defaults without a config file", func(t *testing.T) {
		m, _ := testMain(t)
		if err := m.ParseFlags(nil); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m.Config, DefaultConfig()) || m.ConfigFile != "" || m.Daemonize || m.PIDFile != "" {
			t.Errorf("got %+v", m)
		}
	})
	t.Run("default config file is read when present", func(t *testing.T) {
		m, _ := testMain(t)
		m.DefaultConfigFile = conf
		if err := m.ParseFlags(nil); err != nil {
			t.Fatal(err)
		}
		if m.ConfigFile != conf || m.Config.DocRoot != "/from/file" || !m.Daemonize || m.PIDFile != "/file.pid" {
			t.Errorf("got %+v", m)
		}
	})
	t.Run("flags override the file", func(t *testing.T) {
		m, _ := testMain(t)
		err := m.ParseFlags([]string{"--config=" + conf, "--docroot", "/from/flag", "-maxconns=9", "--pidfile=/flag.pid"})
		if err != nil {
			t.Fatal(err)
		}
		c := m.Config
		if c.DocRoot != "/from/flag" || c.MaxConns != 9 || c.HTTPListen != "127.0.0.1:1111" || m.PIDFile != "/flag.pid" || !m.Daemonize {
			t.Errorf("got %+v daemonize=%v pidfile=%q", c, m.Daemonize, m.PIDFile)
		}
	})
	t.Run("skipconfig", func(t *testing.T) {
		for _, flagName := range []string{"--skipconfig", "-s"} {
			m, _ := testMain(t)
			m.DefaultConfigFile = conf
			if err := m.ParseFlags([]string{flagName, "--config=" + conf}); err != nil {
				t.Fatal(err)
			}
			if m.Config.DocRoot != DefaultDocRoot || m.ConfigFile != "" {
				t.Errorf("%s still read the file: %+v", flagName, m.Config)
			}
		}
	})
	t.Run("short daemonize and bare ports", func(t *testing.T) {
		m, _ := testMain(t)
		if err := m.ParseFlags([]string{"-d", "--httplisten=8500", "--mgmtlisten", "127.0.0.1:8501", "--iostat=false"}); err != nil {
			t.Fatal(err)
		}
		if !m.Daemonize || m.Config.HTTPListen != "0.0.0.0:8500" || m.Config.MgmtListen != "127.0.0.1:8501" || !m.Config.NoIOStat {
			t.Errorf("got %+v daemonize=%v", m.Config, m.Daemonize)
		}
	})
	t.Run("errors", func(t *testing.T) {
		bad := writeConf(t, "docroot = /x\nfrobnicate = yes\n")
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--config=/no/such/file.conf"}, "no such file"},
			{[]string{"--config=" + bad}, "frobnicate"},
			{[]string{"--maxconns=abc"}, "invalid value"},
			{[]string{"--maxconns=0"}, "--maxconns"},
			{[]string{"--httplisten=nowhere"}, "--httplisten"},
			{[]string{"--nosuchflag"}, "not defined"},
			{[]string{"--server=nginx"}, "only the built-in"},
			{[]string{"--docroot="}, "docroot is empty"},
			{[]string{"extra"}, "unexpected argument"},
		} {
			m, _ := testMain(t)
			err := m.ParseFlags(c.args)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("ParseFlags(%q) = %v, want %q", c.args, err, c.want)
			}
		}
		m, out := testMain(t)
		if err := m.ParseFlags([]string{"-h"}); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "Usage: mogstored") {
			t.Errorf("-h: %v, output %q", err, out.String())
		}
	})
}

func TestMainRun(t *testing.T) {
	docroot := t.TempDir()
	os.Mkdir(filepath.Join(docroot, "dev1"), 0o755)
	pidfile := filepath.Join(t.TempDir(), "mogstored.pid")
	m, out := testMain(t)
	started := make(chan *Server, 1)
	m.Started = func(s *Server) { started <- s }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- m.Run(ctx, []string{"--skipconfig", "--docroot=" + docroot, "--httplisten=127.0.0.1:0",
			"--mgmtlisten=127.0.0.1:0", "--pidfile=" + pidfile})
	}()
	var s *Server
	select {
	case s = <-started:
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not start")
	}
	if b, err := os.ReadFile(pidfile); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("pidfile %q, %v", b, err)
	}
	res, err := http.Get("http://" + s.HTTPAddr() + "/dev1/usage")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET usage: %v %v", res, err)
	}
	res.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if !strings.Contains(out.String(), "Running.") {
		t.Errorf("output %q lacks Running.", out.String())
	}
	if _, err := os.Stat(pidfile); !os.IsNotExist(err) {
		t.Errorf("pidfile left behind: %v", err)
	}
}

func TestMainRunStopsOnMgmtShutdown(t *testing.T) {
	docroot := t.TempDir()
	m, _ := testMain(t)
	started := make(chan *Server, 1)
	m.Started = func(s *Server) { started <- s }
	done := make(chan error, 1)
	go func() {
		done <- m.Run(context.Background(), []string{"-s", "--docroot", docroot, "--httplisten=127.0.0.1:0", "--mgmtlisten=127.0.0.1:0"})
	}()
	s := <-started
	if got := dialMgmt(t, s).ask("shutdown"); got != "OK\r\n" {
		t.Fatalf("shutdown answered %q", got)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after shutdown")
	}
}

func TestMainRunFailsToStart(t *testing.T) {
	m, _ := testMain(t)
	err := m.Run(context.Background(), []string{"-s", "--docroot=" + filepath.Join(t.TempDir(), "nope"), "--httplisten=127.0.0.1:0", "--mgmtlisten=127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "docroot") {
		t.Fatalf("Run with a missing docroot: %v", err)
	}
}
