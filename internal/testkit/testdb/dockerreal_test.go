//go:build linux

package testdb

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/gomogile/gomogile/internal/testkit/freshdb"
)

// jobChildEnv marks the test binary run inside the job container.
const jobChildEnv = "GOMOGILE_TEST_JOB_CHILD"

// The job-container case on a real engine: this package's tests, built
// static, run in a container with the host's engine socket mounted — as a
// CI job container beside the host's Docker does — and get a MySQL server
// through dockertest with no env DSN. Inside, 127.0.0.1 is the job's own
// loopback and the published port is not there: the server must be
// reached at the sibling container's own address, and the child's
// container must be gone when it exits.
//
// It needs a local engine and $GOMOGILE_TEST_MYSQL_IMAGE present on it
// (make test under CI sets both up; no image is pulled here), and the go
// command to build the static binary.
func TestDockerJobContainer(t *testing.T) {
	if os.Getenv(jobChildEnv) == "1" {
		t.Skip("the child runs TestDockerJobContainerChild")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, _ := realEngine(ctx, t)
	image := os.Getenv(EnvMySQLImage)
	sock, ok := strings.CutPrefix(e.endpoint, "unix://")
	if e.endpoint == "" {
		sock, ok = "/var/run/docker.sock", true // dockertest's default
	}
	if !ok {
		t.Skipf("engine at %s: the job-container case is a local engine's (a unix socket)", e.endpoint)
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the static test binary: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "testdb.test")
	build := exec.CommandContext(ctx, goCmd, "test", "-c", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c (static): %v\n%s", err, out)
	}

	before := strangers(ctx, t, e)
	name := "gomogile-test-job-" + ownerID()
	unlock, err := lockUsers(name)
	if err != nil {
		t.Fatal(err)
	}
	// A user file of this process keeps another binary's purge off it.
	err = addUser(name)
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.client.CreateContainer(dc.CreateContainerOptions{
		Context: ctx,
		Name:    name,
		Config: &dc.Config{
			Image:      image,
			Entrypoint: []string{"/testdb.test"},
			Cmd:        []string{"-test.run=^TestDockerJobContainerChild$", "-test.v", "-test.count=1"},
			Env: []string{jobChildEnv + "=1", "CI=true", "DOCKER_HOST=unix:///docker.sock",
				EnvMySQLImage + "=" + image, EnvDockerMaxWait + "=90s"},
			Labels: map[string]string{labelTest: "job", labelOwner: ownerID()},
		},
		HostConfig: &dc.HostConfig{Binds: []string{bin + ":/testdb.test:ro", sock + ":/docker.sock"}},
	})
	if err != nil {
		t.Fatalf("create the job container: %v", err)
	}
	t.Cleanup(func() {
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.remove(rctx, c.ID); err != nil {
			t.Error(err)
		}
		if unlock, err := lockUsers(name); err == nil {
			_, _ = dropUser(name)
			unlock()
		}
	})
	if err := e.client.StartContainerWithContext(c.ID, nil, ctx); err != nil {
		t.Fatalf("start the job container: %v", err)
	}
	code, err := e.client.WaitContainerWithContext(c.ID, ctx)
	var logs bytes.Buffer
	_ = e.client.Logs(dc.LogsOptions{Context: ctx, Container: c.ID, OutputStream: &logs, ErrorStream: &logs, Stdout: true, Stderr: true})
	t.Logf("job container's output:\n%s", logs.String())
	if err != nil || code != 0 {
		t.Fatalf("the tests in the job container: exit %d, %v", code, err)
	}
	if !strings.Contains(logs.String(), "--- PASS: TestDockerJobContainerChild") {
		t.Fatalf("the child test did not pass in the job container")
	}
	if after := strangers(ctx, t, e); len(after) > len(before) {
		t.Errorf("containers left by the job's run: %q (before it: %q)", after, before)
	}
}

// killedChildEnv marks the test binary that starts a container and waits
// to be killed.
const killedChildEnv = "GOMOGILE_TEST_KILLED_CHILD"

// kill -9 of a test binary holding a container, then the next process to
// ask for one: the killed binary's container is gone after it. The child
// names the image by its ID, so that its container is its own and not
// one another package's binaries of this run share.
func TestDockerKilledRunPurged(t *testing.T) {
	if os.Getenv(killedChildEnv) != "" {
		t.Skip("the child runs TestDockerKilledRunChild")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, img := realEngine(ctx, t)
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDockerKilledRunChild$", "-test.v")
	child.Env = append(os.Environ(), killedChildEnv+"=1", EnvMySQLImage+"="+img.ID, EnvMySQL+"=")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var name string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if n, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "CONTAINER "); ok {
			name = n
			break
		}
		t.Log("child: " + sc.Text())
	}
	if name == "" {
		child.Process.Kill()
		child.Wait()
		t.Fatalf("the child never said which container it started")
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	if c, err := e.client.InspectContainerWithContext(name, ctx); err != nil || !c.State.Running {
		t.Fatalf("the killed child's container %s: %v; want it left running (the case to purge)", name, err)
	}
	if err := e.purgeLeftovers(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = e.client.InspectContainerWithContext(name, ctx)
	var nsc *dc.NoSuchContainer
	if !errors.As(err, &nsc) {
		t.Errorf("the killed child's container %s after the next start's purge: %v; want it removed", name, err)
		_ = e.remove(ctx, name)
	}
}

// The child: a MySQL container from dockertest, then nothing until killed.
func TestDockerKilledRunChild(t *testing.T) {
	if os.Getenv(killedChildEnv) != "1" {
		t.Skip("run by TestDockerKilledRunPurged")
	}
	d, why, err := mysqlServer()
	if err != nil || d == nil {
		t.Fatalf("no MySQL: %v %s", err, why)
	}
	used.Lock()
	name := used.list[0].name
	used.Unlock()
	fmt.Printf("CONTAINER %s\n", name)
	time.Sleep(5 * time.Minute)
}

// strangers lists the labelled containers of other owners: the job
// container's tests label theirs with the job's own owner id.
func strangers(ctx context.Context, t *testing.T, e *engine) []string {
	t.Helper()
	list, err := e.client.ListContainers(dc.ListContainersOptions{All: true, Context: ctx,
		Filters: map[string][]string{"label": {labelTest}}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list {
		if c.Labels[labelOwner] != ownerID() {
			names = append(names, strings.Join(c.Names, ","))
		}
	}
	return names
}

// The job container's side: MySQL from dockertest, reached somewhere else
// than the job's own loopback.
func TestDockerJobContainerChild(t *testing.T) {
	if os.Getenv(jobChildEnv) != "1" {
		t.Skip("run by TestDockerJobContainer inside a container")
	}
	d, why, err := mysqlServer()
	if err != nil || d == nil {
		t.Fatalf("no MySQL in the job container: %v %s", err, why)
	}
	if ip := net.ParseIP(d.Host); ip == nil || ip.IsLoopback() {
		t.Errorf("reached MySQL at %s; want the sibling container's address (the job's loopback has no published port)", d.Host)
	}
	conn, err := gomysql.NewConnector(freshdb.MySQLAdmin(d))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var v string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
		t.Fatal(err)
	}
	t.Logf("job container reached MySQL %s at %s:%d", v, d.Host, d.Port)
}

// realEngine is the local engine and the $GOMOGILE_TEST_MYSQL_IMAGE image
// on it, or the test's end by dockerUnavailable.
func realEngine(ctx context.Context, t *testing.T) (*engine, *dc.Image) {
	t.Helper()
	image := os.Getenv(EnvMySQLImage)
	if image == "" {
		dockerUnavailable(t, "$"+EnvMySQLImage+" names no local image")
	}
	e, err := newEngine(ctx, "")
	if err != nil {
		dockerUnavailable(t, err.Error())
	}
	img, err := e.client.InspectImage(image)
	if err != nil {
		dockerUnavailable(t, "image "+image+": "+err.Error())
	}
	return e, img
}

// dockerUnavailable ends a test that needs the real engine: a failure
// where make test set one up (CI, or GOMOGILE_TEST_DOCKER=1, unless
// GOMOGILE_TEST_DOCKER=0), else a skip.
func dockerUnavailable(t *testing.T, why string) {
	t.Helper()
	v := os.Getenv("GOMOGILE_TEST_DOCKER")
	if v == "1" || (InCI() && v != "0") {
		t.Fatalf("docker engine unavailable: %s (make test starts one and builds the images under CI=true or GOMOGILE_TEST_DOCKER=1)", why)
	}
	t.Skipf("docker engine unavailable: %s", why)
}
