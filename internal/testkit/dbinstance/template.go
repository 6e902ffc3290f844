package dbinstance

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Initialising a cluster (initdb, CREATE DATABASE; mariadb-install-db)
// costs a second or more of CPU, several times that on a loaded machine,
// and tests and the torture program start many servers. So each process
// initialises one template data directory per kind and copies it for
// every instance; a copy is an independent cluster.

// ownerFile in an instance directory holds the pid of the process that
// made it, so a later process can remove what a killed one left.
const ownerFile = "gomogile-owner"

// dirPrefixes are the directory names this package makes.
var dirPrefixes = []string{"gomogile-pg-", "gomogile-my-", "gomogile-bouncer-", "gomogile-tmpl-"}

var sweepOnce sync.Map // parent dir → *sync.Once

// sweep removes, once per process and parent, the directories of
// instances whose owner process has died without Cleanup (a test binary
// killed at its timeout). A server still running in one is left alone.
func sweep(parent string) {
	o, _ := sweepOnce.LoadOrStore(parent, new(sync.Once))
	o.(*sync.Once).Do(func() {
		for _, pre := range dirPrefixes {
			dirs, _ := filepath.Glob(filepath.Join(parent, pre+"*"))
			for _, d := range dirs {
				if stale(d) {
					os.RemoveAll(d)
				}
			}
		}
	})
}

// stale reports whether d's owner is dead and no server runs in it.
func stale(d string) bool {
	owner, err := readPid(filepath.Join(d, ownerFile))
	if err != nil || owner == os.Getpid() || alive(owner) {
		return false
	}
	for _, pidFile := range []string{"data/postmaster.pid", "mariadb.pid", "pgbouncer.pid"} {
		if pid, err := readPid(filepath.Join(d, pidFile)); err == nil && alive(pid) {
			return false
		}
	}
	return true
}

// readPid reads the number on a file's first line.
func readPid(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	return strconv.Atoi(strings.TrimSpace(line))
}

// copyTree copies the directory src to dst (which must not exist),
// keeping permissions; dst's files belong to a.
func copyTree(src, dst string, a *account) error {
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return os.Mkdir(to, info.Mode().Perm())
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case info.Mode().IsRegular():
			return copyFile(p, to, info.Mode().Perm())
		}
		return nil // sockets and the like are not part of a data directory
	})
	if err != nil {
		return fmt.Errorf("dbinstance: copy template: %w", err)
	}
	if err := a.chownAll(dst); err != nil {
		return fmt.Errorf("dbinstance: copy template: %w", err)
	}
	return nil
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// template is one initialised data directory per kind and process.
type template struct {
	mu   sync.Mutex
	data string
}

var (
	templatesMu sync.Mutex
	templates   = map[string]*template{}
)

// templateData returns the data directory of the template for key, making
// it with mk (given a fresh directory) on first use; a failed attempt is
// not remembered. The template is made under its own deadline, so one
// caller's cancelled context cannot spoil it.
func templateData(key, parent string, a *account, mk func(ctx context.Context, dir string) (data string, err error)) (string, error) {
	templatesMu.Lock()
	t := templates[key]
	if t == nil {
		t = &template{}
		templates[key] = t
	}
	templatesMu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.data != "" {
		if _, err := os.Stat(t.data); err == nil {
			return t.data, nil
		}
	}
	dir, err := tempDir(parent, "gomogile-tmpl-*", a)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	data, err := mk(ctx, dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	t.data = data
	return data, nil
}

// RemoveTemplates removes the template data directories this process has
// made; instances started later make them anew. A program or TestMain
// may call it before exiting; otherwise the next process using this
// package removes them (they name a dead owner).
func RemoveTemplates() error {
	templatesMu.Lock()
	defer templatesMu.Unlock()
	var first error
	for k, t := range templates {
		t.mu.Lock()
		if t.data != "" {
			if err := os.RemoveAll(filepath.Dir(t.data)); err != nil && first == nil {
				first = err
			}
		}
		t.mu.Unlock()
		delete(templates, k)
	}
	return first
}
