package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

// privateDB is a MariaDB server of the test's own, from the installed
// binaries, in a temporary directory on a port of its own, so the test may
// kill it with SIGKILL and start it again (never the shared server).
type privateDB struct {
	t       testing.TB
	dir     string
	port    int
	cmd     *exec.Cmd
	exited  chan struct{}
	logFile *os.File
}

// startPrivateMariaDB installs a data directory and starts a server on it,
// or skips the test where the binaries are not installed.
func startPrivateMariaDB(t testing.TB) *privateDB {
	t.Helper()
	install, err := exec.LookPath("mariadb-install-db")
	if err != nil {
		t.Skip("mariadb-install-db not installed")
	}
	if _, err := exec.LookPath("mariadbd"); err != nil {
		if _, err := os.Stat("/usr/sbin/mariadbd"); err != nil {
			t.Skip("mariadbd not installed")
		}
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	out, err := exec.Command(install, "--no-defaults", "--datadir="+filepath.Join(dir, "data"),
		"--user=root", "--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	p := &privateDB{t: t, dir: dir, port: port, logFile: logFile}
	t.Cleanup(func() {
		p.Kill()
		logFile.Close()
	})
	p.Start()
	db := p.open("")
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE test"); err != nil {
		t.Fatalf("private MariaDB: create database: %v", err)
	}
	return p
}

func mariadbdPath() string {
	if p, err := exec.LookPath("mariadbd"); err == nil {
		return p
	}
	return "/usr/sbin/mariadbd"
}

// DSN is the private server's test database.
func (p *privateDB) DSN() string { return fmt.Sprintf("mysql://root@127.0.0.1:%d/test", p.port) }

func (p *privateDB) open(database string) *sql.DB {
	cfg := gomysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", fmt.Sprintf("127.0.0.1:%d", p.port), database
	c, err := gomysql.NewConnector(cfg)
	if err != nil {
		p.t.Fatal(err)
	}
	return sql.OpenDB(c)
}

// Start starts the server and waits until it answers.
func (p *privateDB) Start() {
	p.t.Helper()
	cmd := exec.Command(mariadbdPath(), "--no-defaults", "--datadir="+filepath.Join(p.dir, "data"),
		"--user=root", fmt.Sprintf("--port=%d", p.port), "--bind-address=127.0.0.1",
		"--socket="+filepath.Join(p.dir, "sock"), "--pid-file="+filepath.Join(p.dir, "pid"),
		"--skip-log-bin", "--innodb-buffer-pool-size=16M", "--innodb-log-file-size=8M",
		"--skip-name-resolve")
	cmd.Stdout, cmd.Stderr = p.logFile, p.logFile
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("start mariadbd: %v", err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) { cmd.Wait(); close(exited) }(p.exited)
	db := p.open("")
	defer db.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-p.exited:
			log, _ := os.ReadFile(filepath.Join(p.dir, "server.log"))
			p.t.Fatalf("mariadbd exited: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("private MariaDB not answering after 60s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill ends the server with SIGKILL, as a crash would, and waits for it.
func (p *privateDB) Kill() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	p.cmd = nil
}
