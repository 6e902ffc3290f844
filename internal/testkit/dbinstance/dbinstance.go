// Package dbinstance starts private database servers — PostgreSQL (with
// streaming standbys), MariaDB, MariaDB Galera clusters and PgBouncer —
// from the binaries installed on the machine, each in its own temporary
// directory on its own free loopback port (below 32768, the start of
// Linux's ephemeral range, so no outgoing connection takes it between a
// Kill and the next Start), so tests and the torture program can crash,
// restart, fail over and pool them without touching a shared server.
//
// A server is a child process in its own process group: Kill sends
// SIGKILL to the whole group (a real crash; the next Start runs crash
// recovery), Stop shuts it down cleanly, Cleanup stops it and removes its
// directory. Pass Cleanup to t.Cleanup; nothing is left running.
//
// When the process runs as root, PostgreSQL and PgBouncer (which refuse
// root) run as the "postgres" OS user, MariaDB with --user=root, and
// Galera nodes (whose rsync state transfer refuses root) as the "mysql"
// OS user. A Galera node is a MariaDB instance with a replication port,
// an IST and an SST port of its own; StartGalera bootstraps the first
// node and joins the others one at a time.
// Available says whether a kind can be started here; its error says what
// to install (scripts/test-servers.sh does it). PostgreSQL is the newest
// /usr/lib/postgresql/<version>/bin, or $GOMOGILE_PG_BINDIR.
//
// Each process initialises one template data directory per kind and
// copies it for every instance (initdb costs seconds on a loaded
// machine); RemoveTemplates removes them, and directories left by a
// process that died are removed by the next one.
//
// It is test and tool infrastructure: it depends on no store backend.
package dbinstance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// ErrUnavailable is wrapped by the errors of Available and of the Start
// functions when a server binary or OS account is missing.
var ErrUnavailable = errors.New("dbinstance: server unavailable")

const installHint = "run scripts/test-servers.sh"

// Available reports whether servers of kind ("postgres", "mariadb",
// "galera" or "pgbouncer") can be started on this machine: nil, or an
// error wrapping ErrUnavailable that says what is missing.
func Available(kind string) error {
	if errPlatform != nil {
		return errPlatform
	}
	switch kind {
	case "postgres":
		_, err := pgBinDir()
		if err == nil {
			_, err = serviceAccount("postgres")
		}
		return err
	case "mariadb", "mysql":
		if _, err := lookBin("mariadbd", "/usr/sbin", "/usr/libexec"); err != nil {
			return err
		}
		_, err := lookBin("mariadb-install-db", "/usr/bin", "/usr/sbin")
		return err
	case "galera":
		if err := Available("mariadb"); err != nil {
			return err
		}
		if _, err := galeraProvider(); err != nil {
			return err
		}
		for _, b := range []string{"wsrep_sst_rsync", "rsync"} {
			if _, err := lookBin(b, "/usr/bin"); err != nil {
				return err
			}
		}
		_, err := serviceAccount("mysql")
		return err
	case "pgbouncer":
		if _, err := lookBin("pgbouncer", "/usr/sbin", "/usr/bin"); err != nil {
			return err
		}
		_, err := serviceAccount("postgres")
		return err
	case "etcd":
		_, err := lookBin("etcd", "/usr/bin", "/usr/local/bin")
		return err
	}
	return fmt.Errorf("dbinstance: unknown kind %q (want postgres, mariadb, galera, pgbouncer or etcd)", kind)
}

// lookBin finds an executable on $PATH or in one of dirs.
func lookBin(name string, dirs ...string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s not found on $PATH or in %s: %s", ErrUnavailable, name, strings.Join(dirs, ", "), installHint)
}

// pgBinDir finds the newest installed PostgreSQL server's bin directory:
// $GOMOGILE_PG_BINDIR, else /usr/lib/postgresql/<version>/bin (Debian),
// else the directory of pg_ctl on $PATH.
func pgBinDir() (string, error) {
	need := []string{"initdb", "postgres", "pg_basebackup"}
	ok := func(dir string) bool {
		for _, n := range need {
			if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("GOMOGILE_PG_BINDIR"); d != "" {
		if ok(d) {
			return d, nil
		}
		return "", fmt.Errorf("%w: $GOMOGILE_PG_BINDIR=%s lacks one of %v: unset it and %s", ErrUnavailable, d, need, installHint)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if ok(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil && ok(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", fmt.Errorf("%w: no PostgreSQL server binaries (initdb, postgres, pg_basebackup) in /usr/lib/postgresql/*/bin or on $PATH: %s", ErrUnavailable, installHint)
}

// pgVersion is the major version in a /usr/lib/postgresql/<v>/bin path.
func pgVersion(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

// account is the OS user a server runs as; nil means this process's user.
type account struct {
	name     string
	uid, gid int
}

// serviceAccount returns the account to run a server that refuses root
// as: nil when not root, else the named OS user.
func serviceAccount(name string) (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w: running as root, and there is no %q OS user to run the server as: %s", ErrUnavailable, name, installHint)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &account{name: name, uid: uid, gid: gid}, nil
}

// chownAll gives a directory tree to a (no-op for nil).
func (a *account) chownAll(dir string) error {
	if a == nil {
		return nil
	}
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, a.uid, a.gid)
	})
}

// Servers get ports in [portMin, portMax): below the kernel's ephemeral
// range (32768 and up on Linux), from which the local end of every
// outgoing connection is taken, so that no connection takes a server's
// port between the check here and the server's bind, or between a Kill
// and the Start that binds the port again; and above the ports of the
// servers tests share (3306, 5432) and of gomogile's own daemons.
const (
	portMin = 20000
	portMax = 32768
)

// handedOut are the ports freePort has returned in this process. A port
// is free to the check only until its server binds it, and servers are
// often given their ports before any of them starts (a Galera cluster's
// nodes: three ports each, every node's address list made before the
// first one runs): without this, two of them could be handed one port,
// and a node would find its own address in its peers' list and abort.
var (
	handedMu  sync.Mutex
	handedOut = map[int]bool{}
)

// freePort returns a loopback TCP port in [portMin, portMax) nothing
// listens on now and this process has not handed out before, chosen at
// random so that processes starting servers at the same time rarely pick
// the same one.
func freePort() (int, error) {
	handedMu.Lock()
	defer handedMu.Unlock()
	var err error
	for range 200 {
		p := portMin + rand.IntN(portMax-portMin)
		if handedOut[p] {
			continue
		}
		var ln net.Listener
		if ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			ln.Close()
			handedOut[p] = true
			return p, nil
		}
	}
	return 0, fmt.Errorf("dbinstance: no free port in [%d, %d): %w", portMin, portMax, err)
}

// tempDir makes a new directory for one server under os.TempDir (or
// parent), owned by a.
func tempDir(parent, pattern string, a *account) (string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	sweep(parent)
	dir, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		return "", fmt.Errorf("dbinstance: %w", err)
	}
	err = os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	if err == nil {
		err = a.chownAll(dir)
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("dbinstance: %w", err)
	}
	return dir, nil
}

// tail returns the end of a log file, for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	const max = 1500
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return strings.TrimSpace(string(b))
}

// run runs a setup command as a, its output going to logPath.
func run(a *account, logPath string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("dbinstance: %w", err)
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	setAccount(cmd, a, false)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("dbinstance: %s: %w\n%s", filepath.Base(name), err, tail(logPath))
	}
	return nil
}
