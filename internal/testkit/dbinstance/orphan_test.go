package dbinstance_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
)

const orphanEnv = "GOMOGILE_DBINSTANCE_ORPHAN_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(orphanEnv) != "" {
		orphanChild()
		return
	}
	code := m.Run()
	dbinstance.RemoveTemplates()
	os.Exit(code)
}

// orphanChild is the child half of TestNoOrphanAfterOwnerDies: it starts
// a server, reports its pids and waits to be killed.
func orphanChild() {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Println("child:", err)
		os.Exit(1)
	}
	pg, err := dbinstance.StartPostgres(ctx, dbinstance.PGOptions{})
	if err != nil {
		fail(err)
	}
	c, err := pgx.Connect(ctx, pg.DSN("test"))
	if err != nil {
		fail(err)
	}
	var backend int
	if err := c.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		fail(err)
	}
	fmt.Printf("ORPHAN %d %d %s\n", pg.Pid(), backend, pg.Dir())
	time.Sleep(time.Minute)
}

// A test binary killed at its timeout cannot clean up; its servers must
// die with it rather than run on.
func TestNoOrphanAfterOwnerDies(t *testing.T) {
	need(t, "postgres")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), orphanEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var postmaster, backend int
	var dir string
	found := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ORPHAN ") {
				_, err := fmt.Sscan(strings.TrimPrefix(sc.Text(), "ORPHAN "), &postmaster, &backend, &dir)
				found <- err
				return
			}
			t.Logf("child: %s", sc.Text())
		}
		found <- fmt.Errorf("child ended without starting a server: %v", sc.Err())
	}()
	select {
	case err := <-found:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("child did not start a server in 60s")
	}
	if !strings.HasPrefix(dir, filepath.Clean(os.TempDir())) {
		t.Fatalf("instance dir %q not under %s", dir, os.TempDir())
	}
	defer os.RemoveAll(dir)
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for dbinstance.Alive(postmaster) || dbinstance.Alive(backend) {
		if time.Now().After(deadline) {
			t.Fatalf("15s after its owner died: postmaster %d alive %v, backend %d alive %v",
				postmaster, dbinstance.Alive(postmaster), backend, dbinstance.Alive(backend))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
