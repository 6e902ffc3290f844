package testdb

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/gomogile/gomogile/conformance"
)

// fakeEngine answers the part of the Docker Engine API testdb uses, with
// the status codes and bodies the engine sends, so the dockertest path can
// be tested on machines (like CI's) that have no engine.
type fakeEngine struct {
	t   *testing.T
	srv *httptest.Server

	mu         sync.Mutex
	containers map[string]*dc.Container // by name
	ports      []dc.PortBinding         // what a created container publishes
	logs       string
	noImage    bool     // images are missing until pulled
	pulls      []string // X-Registry-Auth of each pull
	creates    int
	removes    []string
}

var apiVersion = regexp.MustCompile(`^/v[0-9.]+`)

// newFakeEngine listens on addr (host:0) and points DOCKER_HOST at it.
func newFakeEngine(t *testing.T, addr string) *fakeEngine {
	f := &fakeEngine{t: t, containers: map[string]*dc.Container{}}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	f.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(f.serve)}}
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	t.Setenv("DOCKER_HOST", "tcp://"+ln.Addr().String())
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_MACHINE_NAME", "")
	return f
}

func (f *fakeEngine) byRef(ref string) *dc.Container {
	if c, ok := f.containers[ref]; ok {
		return c
	}
	for _, c := range f.containers {
		if c.ID == ref {
			return c
		}
	}
	return nil
}

func (f *fakeEngine) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := apiVersion.ReplaceAllString(r.URL.Path, "")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	notFound := func(what string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(map[string]string{"message": what})
	}
	switch {
	case path == "/_ping":
		w.Write([]byte("OK"))
	case path == "/version":
		json.NewEncoder(w).Encode(map[string]string{"Version": "27.1.1", "ApiVersion": "1.46", "MinAPIVersion": "1.24"})
	case r.Method == "GET" && parts[0] == "images" && parts[len(parts)-1] == "json":
		if f.noImage {
			notFound("No such image")
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"Id": "sha256:0123"})
	case r.Method == "POST" && path == "/images/create":
		f.pulls = append(f.pulls, r.Header.Get("X-Registry-Auth"))
		f.noImage = false
		json.NewEncoder(w).Encode(map[string]string{"status": "Downloaded newer image"})
	case r.Method == "POST" && path == "/containers/create":
		name := r.URL.Query().Get("name")
		if f.containers[name] != nil {
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(map[string]string{"message": "Conflict. The container name is already in use"})
			return
		}
		var cfg dc.Config
		if err := json.NewDecoder(r.Body).Decode(&cfg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.creates++
		id := strconv.Itoa(f.creates) + strings.Repeat("f", 63)
		f.containers[name] = &dc.Container{ID: id, Name: "/" + name, Config: &cfg,
			NetworkSettings: &dc.NetworkSettings{Ports: map[dc.Port][]dc.PortBinding{}}}
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]string{"Id": id})
	case len(parts) == 3 && parts[0] == "containers" && parts[2] == "start":
		c := f.byRef(parts[1])
		if c == nil {
			notFound("No such container: " + parts[1])
			return
		}
		c.State = dc.State{Running: true, Status: "running"}
		for p := range c.Config.ExposedPorts {
			c.NetworkSettings.Ports[p] = f.ports
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == "GET" && path == "/containers/json":
		// Only the label filter testdb sends: "key=value" or "key".
		var filters map[string][]string
		if v := r.URL.Query().Get("filters"); v != "" {
			if err := json.Unmarshal([]byte(v), &filters); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		list := []dc.APIContainers{}
		for name, c := range f.containers {
			match := true
			for _, l := range filters["label"] {
				k, v, hasV := strings.Cut(l, "=")
				got, ok := c.Config.Labels[k]
				match = match && ok && (!hasV || got == v)
			}
			if match {
				list = append(list, dc.APIContainers{ID: c.ID, Names: []string{"/" + name}, Labels: c.Config.Labels})
			}
		}
		json.NewEncoder(w).Encode(list)
	case len(parts) == 3 && parts[0] == "containers" && parts[2] == "json":
		c := f.byRef(parts[1])
		if c == nil {
			notFound("No such container: " + parts[1])
			return
		}
		json.NewEncoder(w).Encode(c)
	case len(parts) == 3 && parts[0] == "containers" && parts[2] == "logs":
		// Multiplexed stdout frames, as the engine sends without a TTY.
		hdr := make([]byte, 8)
		hdr[0] = 1
		binary.BigEndian.PutUint32(hdr[4:], uint32(len(f.logs)))
		w.Header().Set("Content-Type", "application/vnd.docker.raw-stream")
		w.Write(append(hdr, f.logs...))
	case r.Method == "DELETE" && len(parts) == 2 && parts[0] == "containers":
		c := f.byRef(parts[1])
		if c == nil {
			notFound("No such container: " + parts[1])
			return
		}
		f.removes = append(f.removes, c.ID)
		delete(f.containers, strings.TrimPrefix(c.Name, "/"))
		w.WriteHeader(http.StatusNoContent)
	default:
		f.t.Errorf("fake engine: unexpected %s %s", r.Method, r.URL.Path)
		http.Error(w, "unexpected", http.StatusNotImplemented)
	}
}

func testSpec(ready func(context.Context, string) error) containerSpec {
	return containerSpec{kind: "postgres", image: "postgres:16.6", port: "5432/tcp", ready: ready}
}

// A DOCKER_HOST that accepts connections and never answers must end the
// ping after pingTimeout, not hang the tests until go test's timeout.
func TestEnginePingTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	t.Setenv("DOCKER_HOST", "tcp://"+srv.Listener.Addr().String())
	t.Setenv("DOCKER_CERT_PATH", "")
	t.Setenv("DOCKER_MACHINE_NAME", "")
	old := pingTimeout
	pingTimeout = 300 * time.Millisecond
	defer func() { pingTimeout = old }()

	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := newEngine(context.Background(), "")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("newEngine succeeded against an engine that never answers")
		}
		if !strings.Contains(err.Error(), "did not answer a ping") {
			t.Errorf("error %q does not say the engine did not answer", err)
		}
		t.Logf("gave up after %v: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(10 * time.Second):
		t.Fatal("newEngine still waiting 10s after a 300ms ping timeout")
	}
}

func TestEngineHost(t *testing.T) {
	for endpoint, want := range map[string]string{
		"":                            "",
		"unix:///var/run/docker.sock": "",
		"tcp://docker:2376":           "docker",
		"tcp://10.1.2.3:2375":         "10.1.2.3",
		"https://[fd00::5]:2376":      "fd00::5",
		"npipe:////./pipe/docker":     "",
	} {
		if got := engineHost(endpoint); got != want {
			t.Errorf("engineHost(%q) = %q, want %q", endpoint, got, want)
		}
	}
}

// On a local engine the container's own address and its network's
// gateway follow the published port, for a test run in a job container
// that cannot reach the published port on 127.0.0.1; a remote engine's
// container networks are not this machine's.
func TestAddrs(t *testing.T) {
	c := &dc.Container{ID: "abc", NetworkSettings: &dc.NetworkSettings{
		Ports:     map[dc.Port][]dc.PortBinding{"3306/tcp": {{HostIP: "127.0.0.1", HostPort: "49153"}}},
		IPAddress: "172.17.0.2", Gateway: "172.17.0.1",
		Networks: map[string]dc.ContainerNetwork{
			"bridge": {IPAddress: "172.17.0.2", Gateway: "172.17.0.1"},
			"ci":     {IPAddress: "10.9.0.5", Gateway: "10.9.0.1"},
		}}}
	local := &engine{}
	got, err := local.addrs(c, "3306/tcp")
	want := "127.0.0.1:49153 172.17.0.2:3306 10.9.0.5:3306 172.17.0.1:49153 10.9.0.1:49153"
	if err != nil || strings.Join(got, " ") != want {
		t.Errorf("local engine: addrs = %q, %v; want %q", got, err, want)
	}
	remote := &engine{host: "docker"}
	if got, err := remote.addrs(c, "3306/tcp"); err != nil || strings.Join(got, " ") != "docker:49153" {
		t.Errorf("remote engine: addrs = %q, %v; want only docker:49153", got, err)
	}
}

// The first of the addresses that answers is the one handed out, the
// published port before the others.
func TestWaitReadyTriesEachAddress(t *testing.T) {
	var probed []string
	spec := testSpec(func(ctx context.Context, addr string) error {
		probed = append(probed, addr)
		if addr == "172.17.0.2:5432" {
			return nil
		}
		return errors.New("connection refused")
	})
	e := &engine{}
	got, err := e.waitReady(context.Background(), spec, []string{"127.0.0.1:49153", "172.17.0.2:5432", "172.17.0.1:49153"}, time.Minute)
	if err != nil || got != "172.17.0.2:5432" || strings.Join(probed, " ") != "127.0.0.1:49153 172.17.0.2:5432" {
		t.Errorf("waitReady = %q, %v after probing %q; want the container's address, after the published port", got, err, probed)
	}
	_, err = e.waitReady(context.Background(), testSpec(func(context.Context, string) error { return errors.New("refused") }),
		[]string{"127.0.0.1:1", "172.17.0.2:5432"}, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1 or 172.17.0.2:5432") {
		t.Errorf("waitReady with nothing answering: %v; want an error naming every address", err)
	}
}

func TestHostPort(t *testing.T) {
	ctr := func(b ...dc.PortBinding) *dc.Container {
		return &dc.Container{ID: "abc", NetworkSettings: &dc.NetworkSettings{Ports: map[dc.Port][]dc.PortBinding{"5432/tcp": b}}}
	}
	cases := []struct {
		c          *dc.Container
		engineHost string
		want       string // "" = an error
	}{
		{ctr(dc.PortBinding{HostIP: "0.0.0.0", HostPort: "49153"}), "", "127.0.0.1:49153"},
		{ctr(dc.PortBinding{HostIP: "", HostPort: "49153"}), "", "127.0.0.1:49153"},
		{ctr(dc.PortBinding{HostIP: "::", HostPort: "49154"}, dc.PortBinding{HostIP: "0.0.0.0", HostPort: "49153"}), "", "127.0.0.1:49153"},
		{ctr(dc.PortBinding{HostIP: "::", HostPort: "49154"}), "", "[::1]:49154"},
		{ctr(dc.PortBinding{HostIP: "0.0.0.0", HostPort: "49153"}), "docker", "docker:49153"},
		{ctr(dc.PortBinding{HostIP: "10.0.0.7", HostPort: "49153"}), "", "10.0.0.7:49153"},
		{ctr(), "", ""},
		{ctr(dc.PortBinding{HostIP: "0.0.0.0", HostPort: ""}), "", ""},
		{&dc.Container{ID: "abc", NetworkSettings: &dc.NetworkSettings{}}, "", ""},
		{&dc.Container{ID: "abc"}, "", ""},
	}
	for i, c := range cases {
		got, err := hostPort(c.c, "5432/tcp", c.engineHost)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("case %d: hostPort = %q, want an error", i, got)
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("case %d: hostPort = %q, %v; want %q", i, got, err, c.want)
		}
	}
}

// The address of a container on a tcp:// engine is the engine's host with
// the published port, not the binding's 0.0.0.0 (this machine).
func TestStartUsesDockerHost(t *testing.T) {
	f := newFakeEngine(t, "127.0.0.2:0")
	f.ports = []dc.PortBinding{{HostIP: "0.0.0.0", HostPort: "49153"}}
	e, err := newEngine(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(nil)
	addrs, created, err := e.start(context.Background(), spec, containerName(spec))
	addr := strings.Join(addrs, ",")
	if err != nil {
		t.Fatal(err)
	}
	if addr != "127.0.0.2:49153" || !created {
		t.Errorf("start = %q, created=%v; want 127.0.0.2:49153 (DOCKER_HOST's host), created", addr, created)
	}
	c := f.containers[containerName(spec)]
	if c == nil || c.Config.Labels[labelTest] != "postgres" || c.Config.Image != "postgres:16.6" {
		t.Errorf("container not created as asked: %+v", c)
	}
}

// A missing image is pulled with the credentials config.json holds for its
// registry, as docker pull would send them.
func TestStartPullsWithCredentials(t *testing.T) {
	f := newFakeEngine(t, "127.0.0.1:0")
	f.ports = []dc.PortBinding{{HostIP: "0.0.0.0", HostPort: "49153"}}
	f.noImage = true
	cfg := t.TempDir()
	t.Setenv("DOCKER_CONFIG", cfg)
	if err := os.WriteFile(filepath.Join(cfg, "config.json"), []byte(`{"auths": {"registry.example:5000": {"auth": "dTpw"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := newEngine(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(nil)
	spec.image = "registry.example:5000/postgres:16.6"
	if _, _, err := e.start(context.Background(), spec, containerName(spec)); err != nil {
		t.Fatal(err)
	}
	if len(f.pulls) != 1 {
		t.Fatalf("%d pulls; want 1", len(f.pulls))
	}
	b, _ := base64.URLEncoding.DecodeString(f.pulls[0])
	var a dc.AuthConfiguration
	if err := json.Unmarshal(b, &a); err != nil || a.Username != "u" || a.Password != "p" {
		t.Errorf("pull sent X-Registry-Auth %q (%+v, %v); want user u, password p", f.pulls[0], a, err)
	}
}

// A container that publishes no port is an error (and is removed, with its
// logs in the error), never an address that falls back to a local socket.
func TestStartEmptyPortMapping(t *testing.T) {
	f := newFakeEngine(t, "127.0.0.1:0")
	f.ports = []dc.PortBinding{}
	f.logs = "FATAL: data directory has wrong ownership\n"
	old := portWait
	portWait = 300 * time.Millisecond
	defer func() { portWait = old }()
	e, err := newEngine(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(nil)
	addrs, _, err := e.start(context.Background(), spec, containerName(spec))
	if err == nil {
		addr := strings.Join(addrs, ",")
		t.Fatalf("start = %q with an empty port mapping, want an error", addr)
	}
	if !strings.Contains(err.Error(), "publishes no host port") || !strings.Contains(err.Error(), "wrong ownership") {
		t.Errorf("error %q: want the missing port and the container's logs", err)
	}
	if len(f.removes) != 1 || len(f.containers) != 0 {
		t.Errorf("removed %v, left %d containers; want the one created removed", f.removes, len(f.containers))
	}
}

// A labelled running container of the name is reused; one of the name
// without the label is not touched.
func TestStartReusesLabelledContainer(t *testing.T) {
	f := newFakeEngine(t, "127.0.0.1:0")
	spec := testSpec(nil)
	name := containerName(spec)
	running := func(labels map[string]string) *dc.Container {
		return &dc.Container{ID: strings.Repeat("a", 64), Name: "/" + name,
			Config: &dc.Config{Image: spec.image, Labels: labels, ExposedPorts: map[dc.Port]struct{}{"5432/tcp": {}}},
			State:  dc.State{Running: true, Status: "running"},
			NetworkSettings: &dc.NetworkSettings{Ports: map[dc.Port][]dc.PortBinding{
				"5432/tcp": {{HostIP: "0.0.0.0", HostPort: "40000"}}}}}
	}
	f.containers[name] = running(map[string]string{labelTest: "postgres"})
	e, err := newEngine(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	addrs, created, err := e.start(context.Background(), spec, name)
	if addr := strings.Join(addrs, ","); err != nil || created || addr != "127.0.0.1:40000" || f.creates != 0 {
		t.Errorf("start = %q, created=%v, %v (creates=%d); want the running container reused", addr, created, err, f.creates)
	}

	f.containers[name] = running(nil)
	if _, _, err := e.start(context.Background(), spec, name); err == nil || !strings.Contains(err.Error(), "without label") {
		t.Errorf("start with a foreign container of the name: %v, want a refusal", err)
	}
	if len(f.removes) != 0 {
		t.Errorf("removed %v: a container without our label must not be touched", f.removes)
	}
}

// The last test binary to let go of a container removes it; a binary that
// died (killed by go test's timeout) does not keep it alive.
func TestReleaseRemovesWhenLastUser(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	f := newFakeEngine(t, "127.0.0.1:0")
	f.ports = []dc.PortBinding{{HostIP: "0.0.0.0", HostPort: "49153"}}
	used.Lock()
	was := used.mainCalled
	used.mainCalled = true
	used.Unlock()
	defer func() { used.Lock(); used.mainCalled = was; used.Unlock() }()

	readyCalls := 0
	spec := testSpec(func(ctx context.Context, addr string) error {
		readyCalls++
		if addr != "127.0.0.1:49153" {
			t.Errorf("ready probed %q", addr)
		}
		return nil
	})
	addr, err := dockerServer(context.Background(), spec)
	if err != nil || addr != "127.0.0.1:49153" || readyCalls == 0 {
		t.Fatalf("dockerServer = %q, %v (ready probed %d times)", addr, err, readyCalls)
	}
	name := containerName(spec)

	// Another live binary (our parent stands in) and a dead one use it too.
	dead := exec.Command(os.Args[0], "-test.run=^$")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dir := usersDir(name)
	for _, pid := range []int{os.Getppid(), dead.Process.Pid} {
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := releaseAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(f.removes) != 0 {
		t.Fatalf("removed %v while another live binary uses it", f.removes)
	}
	if _, err := os.Stat(filepath.Join(dir, strconv.Itoa(dead.Process.Pid))); !os.IsNotExist(err) {
		t.Errorf("the dead binary's user file is still there: %v", err)
	}

	// Our parent gone, this process is the last user.
	os.Remove(filepath.Join(dir, strconv.Itoa(os.Getppid())))
	if _, err := dockerServer(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if f.creates != 1 {
		t.Errorf("created %d containers; want the running one reused", f.creates)
	}
	if err := releaseAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(f.removes) != 1 || len(f.containers) != 0 {
		t.Errorf("removed %v, %d left; want the container removed by its last user", f.removes, len(f.containers))
	}
}

// A run killed before it could release its containers (kill -9) leaves
// them running with its user file behind: the next process to ask for a
// container removes those no live binary uses, and only those of its own
// owner label, and none with GOMOGILE_TEST_DOCKER_KEEP=1.
func TestPurgeLeftovers(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	f := newFakeEngine(t, "127.0.0.1:0")
	dead := exec.Command(os.Args[0], "-test.run=^$")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	put := func(name string, labels map[string]string, users ...int) {
		f.containers[name] = &dc.Container{ID: name + strings.Repeat("0", 64-len(name)), Name: "/" + name,
			Config: &dc.Config{Labels: labels}, State: dc.State{Running: true, Status: "running"}}
		if err := os.MkdirAll(usersDir(name), 0o700); err != nil {
			t.Fatal(err)
		}
		for _, pid := range users {
			if err := os.WriteFile(filepath.Join(usersDir(name), strconv.Itoa(pid)), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	ours := map[string]string{labelTest: "mysql", labelOwner: ownerID()}
	put("killed", ours, dead.Process.Pid)
	put("never-used", ours)
	put("in-use", ours, os.Getppid(), dead.Process.Pid)
	put("other-owner", map[string]string{labelTest: "mysql", labelOwner: "0badc0de"}, dead.Process.Pid)
	put("not-ours", map[string]string{"app": "db"})
	e, err := newEngine(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}

	t.Setenv(EnvDockerKeep, "1")
	if err := e.purgeLeftovers(context.Background()); err != nil || len(f.removes) != 0 {
		t.Fatalf("purge with %s=1: removed %v, %v; want nothing removed", EnvDockerKeep, f.removes, err)
	}
	t.Setenv(EnvDockerKeep, "")
	if err := e.purgeLeftovers(context.Background()); err != nil {
		t.Fatal(err)
	}
	var left []string
	for name := range f.containers {
		left = append(left, name)
	}
	sort.Strings(left)
	if got := strings.Join(left, " "); got != "in-use not-ours other-owner" {
		t.Errorf("left %q; want the killed run's and the unused container removed, the rest kept", got)
	}
	if n, _ := liveUsers("in-use"); n != 1 {
		t.Errorf("in-use has %d live users; want the dead one's file removed, the live one's kept", n)
	}
}

func TestImageAndMaxWaitFromEnv(t *testing.T) {
	t.Setenv(EnvPostgresImage, "")
	if got := imageFrom(EnvPostgresImage, DefaultPostgresImage); got != DefaultPostgresImage {
		t.Errorf("default image %q", got)
	}
	t.Setenv(EnvPostgresImage, "mirror.example:5000/library/postgres:16.6")
	if got := imageFrom(EnvPostgresImage, DefaultPostgresImage); got != "mirror.example:5000/library/postgres:16.6" {
		t.Errorf("override image %q", got)
	}
	if repo, tag := splitImage("mirror.example:5000/library/postgres:16.6"); repo != "mirror.example:5000/library/postgres" || tag != "16.6" {
		t.Errorf("splitImage = %q, %q", repo, tag)
	}
	if repo, tag := splitImage("mirror.example:5000/postgres"); repo != "mirror.example:5000/postgres" || tag != "latest" {
		t.Errorf("splitImage = %q, %q", repo, tag)
	}
	for _, d := range []string{DefaultMySQLImage, DefaultPostgresImage} {
		if _, tag := splitImage(d); !strings.Contains(tag, ".") {
			t.Errorf("default image %s is not pinned to a minor version", d)
		}
	}
	t.Setenv(EnvDockerMaxWait, "")
	if d, err := maxWait(); err != nil || d != DefaultMaxWait {
		t.Errorf("maxWait = %v, %v", d, err)
	}
	t.Setenv(EnvDockerMaxWait, "12m")
	if d, err := maxWait(); err != nil || d != 12*time.Minute {
		t.Errorf("maxWait = %v, %v", d, err)
	}
	t.Setenv(EnvDockerMaxWait, "soon")
	if _, err := maxWait(); err == nil {
		t.Error("maxWait accepted soon")
	}
}

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// A backend that cannot run says so in the summary file once per binary,
// however many tests skip for it.
func TestUnavailableWritesSummaryOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.txt")
	t.Setenv(conformance.SummaryEnv, path)
	t.Setenv("CI", "")
	skipsTold.Delete("nosuchdb")
	for i := 0; i < 2; i++ {
		t.Run("Skip", func(t *testing.T) { Unavailable(t, "nosuchdb", "no server here") })
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "testdb: backend=nosuchdb skipped (first in TestUnavailableWritesSummaryOnce/Skip): no server here\n"; got != want {
		t.Errorf("summary %q; want %q", got, want)
	}
}
