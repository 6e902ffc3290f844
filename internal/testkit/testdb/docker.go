package testdb

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// Environment variables steering the dockertest path. The engine itself is
// found the way the docker CLI finds it: DOCKER_HOST (unix:// or tcp://),
// DOCKER_CERT_PATH and DOCKER_TLS_VERIFY for TLS.
const (
	EnvMySQLImage    = "GOMOGILE_TEST_MYSQL_IMAGE"    // default DefaultMySQLImage; a mirror or mariadb:10.11 work too
	EnvPostgresImage = "GOMOGILE_TEST_POSTGRES_IMAGE" // default DefaultPostgresImage
	EnvDockerMaxWait = "GOMOGILE_TEST_DOCKER_MAXWAIT" // how long a container may take to answer; default DefaultMaxWait
	EnvDockerKeep    = "GOMOGILE_TEST_DOCKER_KEEP"    // 1: leave the containers running after the run, for the next one
)

// Pinned defaults, so two runs a month apart test against the same server.
const (
	DefaultMySQLImage    = "mysql:8.4.3"
	DefaultPostgresImage = "postgres:16.6"
	// DefaultMaxWait covers a first pull on a slow link plus MySQL 8's
	// two-phase first start.
	DefaultMaxWait = 5 * time.Minute
)

// Labels on every container testdb starts: `docker ps --filter
// label=gomogile.test` finds them, and testdb refuses to reuse or remove a
// container of the same name that does not carry them.
const (
	labelTest  = "gomogile.test"
	labelOwner = "gomogile.test.owner"
)

// pingTimeout bounds the first question to the engine: a DOCKER_HOST that
// accepts connections and never answers must cost seconds, not the whole
// go test timeout.
var pingTimeout = 5 * time.Second

// Why testdb drives dockertest's client itself rather than its Pool
// helpers (v3.12.0):
//   - RunWithOptions takes no context and pulls with no timeout (a pull
//     that stalls holds every test binary of the run, waiting on the
//     container lock, until go test's timeout); it reads credentials only
//     from a helper for three-part names, not config.json's "auths"; and a
//     name already taken by another binary of the same run is an error to
//     it, where testdb reuses that container (one server per image per run).
//   - Retry probes one address with no context; testdb probes the
//     published port and then, for a job container, the container's own
//     address and its gateway (engine.addrs), within a deadline.
//   - Purge removes a Resource this process made; the leftovers of a
//     killed run are not this process's and are found by label
//     (purgeLeftovers). Expire stops the container after a fixed time even
//     while another binary still uses it; testdb removes a container when
//     its last live user lets go instead.
// NewPool and NewTLSPool are used for the connection, as they are.

// engine is a Docker engine and the host its published ports are reached on.
type engine struct {
	client *dc.Client
	// host replaces the HostIP of a port binding: the engine publishes on
	// its own interfaces, which are this machine's only when the engine is
	// local (a unix socket). For tcp://host:port it is that host.
	host string
	// endpoint is where the engine was reached ("unix:///run/docker.sock").
	endpoint string
}

// newEngine connects to the engine at endpoint ("" = from the
// environment, as dockertest and the docker CLI read it) and pings it,
// giving up after pingTimeout.
func newEngine(ctx context.Context, endpoint string) (*engine, error) {
	target := dockerTarget{endpoint: endpoint, from: "the caller"}
	if endpoint == "" {
		var err error
		if target, err = findDocker(); err != nil {
			return nil, err
		}
		endpoint = target.endpoint
	}
	var pool *dockertest.Pool
	var err error
	if target.tlsDir != "" {
		// dockertest's NewPool takes TLS only from DOCKER_CERT_PATH: a
		// context's TLS files, or DOCKER_TLS_VERIFY's default directory,
		// would get plain HTTP on a TLS port.
		pool, err = dockertest.NewTLSPool(endpoint, target.tlsDir)
	} else {
		pool, err = dockertest.NewPool(endpoint)
	}
	if err != nil {
		return nil, fmt.Errorf("docker client (%s): %w", target.from, err)
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := pool.Client.PingWithContext(pctx); err != nil {
		if pctx.Err() != nil {
			return nil, fmt.Errorf("docker engine %s did not answer a ping within %v: %w", endpointName(endpoint), pingTimeout, err)
		}
		return nil, fmt.Errorf("no docker engine at %s: %w", endpointName(endpoint), err)
	}
	return &engine{client: pool.Client, host: engineHost(endpoint), endpoint: endpoint}, nil
}

func endpointName(endpoint string) string {
	if endpoint == "" {
		return "the default socket"
	}
	return endpoint
}

// engineHost is the host published ports are reached on for an engine at
// endpoint: the endpoint's host for tcp/http/https, else "" (the binding's
// own address, local).
func engineHost(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	switch u.Scheme {
	case "tcp", "http", "https":
		return u.Hostname()
	}
	return ""
}

// containerSpec is one kind of test server.
type containerSpec struct {
	kind  string // "mysql", "postgres": the name and the log prefix
	image string // repository:tag
	env   []string
	port  string // the server's port inside the container, "3306/tcp"
	// ready reports whether the server at addr (host:port) answers.
	ready func(ctx context.Context, addr string) error
}

// imageFrom is the image named by environment variable env, else def.
func imageFrom(env, def string) string {
	if v := strings.TrimSpace(os.Getenv(env)); v != "" {
		return v
	}
	return def
}

// maxWait is how long a started container may take to answer.
func maxWait() (time.Duration, error) {
	v := os.Getenv(EnvDockerMaxWait)
	if v == "" {
		return DefaultMaxWait, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 10m", EnvDockerMaxWait, v)
	}
	return d, nil
}

// splitImage splits "repo:tag" (a registry host may carry a port) into the
// repository and tag, "latest" when none is given.
func splitImage(image string) (repo, tag string) {
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return image, "latest"
	}
	return image[:i], image[i+1:]
}

// containerName is the fixed name every test binary of one user on one
// machine uses for spec's container, so that the binaries `go test ./...`
// runs side by side share one server per image instead of starting one
// each. The owner hash keeps two machines sharing a remote engine apart.
func containerName(spec containerSpec) string {
	var b strings.Builder
	for _, r := range spec.image {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return "gomogile-test-" + spec.kind + "-" + b.String() + "-" + ownerID()
}

func ownerID() string {
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(host + "\x00" + strconv.Itoa(os.Getuid())))
	return hex.EncodeToString(sum[:4])
}

// hostPort is the host:port a test reaches port of container c on. A
// container without a published binding for it is an error: an empty
// address would send a driver to its default (a local socket, the
// developer's own server), where the tests create and drop databases.
func hostPort(c *dc.Container, port, engineHost string) (string, error) {
	if c == nil || c.NetworkSettings == nil {
		return "", fmt.Errorf("container has no network settings")
	}
	var binding *dc.PortBinding
	for i, b := range c.NetworkSettings.Ports[dc.Port(port)] {
		if b.HostPort == "" || b.HostPort == "0" {
			continue
		}
		if binding == nil || (strings.Contains(binding.HostIP, ":") && !strings.Contains(b.HostIP, ":")) {
			// Prefer an IPv4 binding: not every runner has IPv6 loopback.
			binding = &c.NetworkSettings.Ports[dc.Port(port)][i]
		}
	}
	if binding == nil {
		return "", fmt.Errorf("container %s publishes no host port for %s", shortID(c.ID), port)
	}
	host := engineHost
	if host == "" {
		switch binding.HostIP {
		case "", "0.0.0.0":
			host = "127.0.0.1"
		case "::":
			host = "::1"
		default:
			host = binding.HostIP
		}
	}
	return net.JoinHostPort(host, binding.HostPort), nil
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// addrs is where a test may reach port of container c, best first: the
// published port (hostPort), then — for a local engine only — the
// container's own addresses on its networks with the port itself, and
// the networks' gateways with the published port. The later ones are for
// a test run inside a container beside the host's engine socket (a CI job
// container): there 127.0.0.1 is the job's own loopback, where the
// published port is not, while the sibling container's address on the
// shared bridge is reachable.
func (e *engine) addrs(c *dc.Container, port string) ([]string, error) {
	first, err := hostPort(c, port, e.host)
	if err != nil {
		return nil, err
	}
	list := []string{first}
	if e.host != "" {
		// A remote engine's container networks are the remote machine's.
		return list, nil
	}
	_, published, _ := net.SplitHostPort(first)
	inner := strings.TrimSuffix(strings.TrimSuffix(port, "/tcp"), "/udp")
	add := func(host, p string) {
		if host == "" {
			return
		}
		a := net.JoinHostPort(host, p)
		for _, have := range list {
			if have == a {
				return
			}
		}
		list = append(list, a)
	}
	// Sorted by network name, so that the order is the same every time.
	names := make([]string, 0, len(c.NetworkSettings.Networks))
	for n := range c.NetworkSettings.Networks {
		names = append(names, n)
	}
	sort.Strings(names)
	add(c.NetworkSettings.IPAddress, inner)
	for _, n := range names {
		add(c.NetworkSettings.Networks[n].IPAddress, inner)
	}
	add(c.NetworkSettings.Gateway, published)
	for _, n := range names {
		add(c.NetworkSettings.Networks[n].Gateway, published)
	}
	return list, nil
}

// portWait bounds how long a just-started container may take to have its
// ports published (the engine fills them in shortly after start).
var portWait = 10 * time.Second

// start returns the addresses (engine.addrs) of a running server for
// spec: the labelled container of that name if one runs (left by another
// test binary of this run or, with EnvDockerKeep, by an earlier run), else
// a new one. created says whether this call made the container.
func (e *engine) start(ctx context.Context, spec containerSpec, name string) (addrs []string, created bool, err error) {
	c, err := e.client.InspectContainerWithContext(name, ctx)
	var nsc *dc.NoSuchContainer
	switch {
	case errors.As(err, &nsc):
		c = nil
	case err != nil:
		return nil, false, fmt.Errorf("inspect container %s: %w", name, err)
	case c.Config == nil || c.Config.Labels[labelTest] != spec.kind:
		return nil, false, fmt.Errorf("a container named %s exists without label %s=%s; not touching it", name, labelTest, spec.kind)
	case !c.State.Running:
		// Left stopped by a crashed run: its data may be half-initialised.
		if err := e.remove(ctx, c.ID); err != nil {
			return nil, false, err
		}
		c = nil
	}
	if c == nil {
		if c, err = e.create(ctx, spec, name); err != nil {
			return nil, false, err
		}
		created = true
	}
	c, err = e.waitPorts(ctx, c.ID, spec.port)
	if err == nil {
		addrs, err = e.addrs(c, spec.port)
	}
	if err != nil {
		return nil, created, e.failed(ctx, c, created, err)
	}
	return addrs, created, nil
}

// create pulls the image when missing and creates and starts the
// container. A container of the same name created meanwhile by another
// test binary is used instead.
func (e *engine) create(ctx context.Context, spec containerSpec, name string) (*dc.Container, error) {
	repo, tag := splitImage(spec.image)
	if _, err := e.client.InspectImage(spec.image); errors.Is(err, dc.ErrNoSuchImage) {
		// Bounded as a container's start is (a pull is most of a first
		// start), and given up when the registry sends nothing for a
		// minute; with the credentials docker pull would use.
		wait, err := maxWait()
		if err != nil {
			return nil, err
		}
		pctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		if err := e.client.PullImage(dc.PullImageOptions{Repository: repo, Tag: tag, Context: pctx, InactivityTimeout: time.Minute},
			registryAuth(spec.image)); err != nil {
			return nil, fmt.Errorf("pull %s: %w", spec.image, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("inspect image %s: %w", spec.image, err)
	}
	c, err := e.client.CreateContainer(dc.CreateContainerOptions{
		Context: ctx,
		Name:    name,
		Config: &dc.Config{
			Image:        spec.image,
			Env:          spec.env,
			ExposedPorts: map[dc.Port]struct{}{dc.Port(spec.port): {}},
			Labels:       map[string]string{labelTest: spec.kind, labelOwner: ownerID()},
		},
		// No AutoRemove: a container that dies at start keeps its logs for
		// failed() to print. testdb removes what it made.
		HostConfig: &dc.HostConfig{PublishAllPorts: true, RestartPolicy: dc.RestartPolicy{Name: "no"}},
	})
	if errors.Is(err, dc.ErrContainerAlreadyExists) {
		return e.client.InspectContainerWithContext(name, ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("create container %s from %s: %w", name, spec.image, err)
	}
	err = e.client.StartContainerWithContext(c.ID, nil, ctx)
	var running *dc.ContainerAlreadyRunning
	if err != nil && !errors.As(err, &running) {
		return c, e.failed(ctx, c, true, fmt.Errorf("start container %s: %w", name, err))
	}
	return c, nil
}

// waitPorts inspects container id until port has a published binding, or
// portWait passes.
func (e *engine) waitPorts(ctx context.Context, id, port string) (*dc.Container, error) {
	deadline := time.Now().Add(portWait)
	for {
		c, err := e.client.InspectContainerWithContext(id, ctx)
		if err != nil {
			return nil, fmt.Errorf("inspect container %s: %w", shortID(id), err)
		}
		if _, err := hostPort(c, port, e.host); err == nil || time.Now().After(deadline) || (c.State.Status != "" && !c.State.Running) {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return c, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitReady polls spec.ready at each of addrs in turn, best first, until
// one answers or wait passes, and returns the one that answered.
func (e *engine) waitReady(ctx context.Context, spec containerSpec, addrs []string, wait time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	delay := 200 * time.Millisecond
	for {
		var err error
		for _, addr := range addrs {
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			err = spec.ready(pctx, addr)
			pcancel()
			if err == nil {
				return addr, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s at %s did not answer within %v (%s sets the limit): %w", spec.kind, strings.Join(addrs, " or "), wait, EnvDockerMaxWait, err)
		case <-time.After(delay):
		}
		if delay < 2*time.Second {
			delay *= 2
		}
	}
}

// failed adds the container's last log lines to err (a server that dies at
// start says why there) and removes the container when this run made it.
func (e *engine) failed(ctx context.Context, c *dc.Container, created bool, err error) error {
	if c == nil {
		return err
	}
	var logs bytes.Buffer
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	lerr := e.client.Logs(dc.LogsOptions{Context: lctx, Container: c.ID, OutputStream: &logs, ErrorStream: &logs, Stdout: true, Stderr: true, Tail: "50"})
	switch {
	case lerr != nil:
		err = fmt.Errorf("%w (container logs unavailable: %v)", err, lerr)
	case logs.Len() > 0:
		err = fmt.Errorf("%w\ncontainer %s logs (last 50 lines):\n%s", err, shortID(c.ID), strings.TrimRight(logs.String(), "\n"))
	}
	if created {
		if rerr := e.remove(lctx, c.ID); rerr != nil {
			err = fmt.Errorf("%w (%v)", err, rerr)
		}
	}
	return err
}

func (e *engine) remove(ctx context.Context, id string) error {
	err := e.client.RemoveContainer(dc.RemoveContainerOptions{Context: ctx, ID: id, Force: true, RemoveVolumes: true})
	var nsc *dc.NoSuchContainer
	if err != nil && !errors.As(err, &nsc) {
		return fmt.Errorf("remove container %s: %w", shortID(id), err)
	}
	return nil
}

// The containers this process uses, released by Main.
var used struct {
	sync.Mutex
	mainCalled bool
	list       []usedContainer
}

type usedContainer struct {
	e    *engine
	name string
}

// Main runs the package's tests and then lets go of the containers they
// used: the last test binary of a run to let go of one removes it (unless
// GOMOGILE_TEST_DOCKER_KEEP=1). Every package that calls MySQL or
// Postgres has
//
//	func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }
//
// without which its containers would outlive the run.
//
// Main also runs the child process of TryOnceAfterPause in place of the
// tests, when this binary was started as one.
func Main(m *testing.M) int {
	if dsn := os.Getenv(tryOnceEnv); dsn != "" {
		return tryOnceChild(dsn)
	}
	used.Lock()
	used.mainCalled = true
	used.Unlock()
	code := m.Run()
	if err := releaseAll(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "testdb:", err)
	}
	if err := stopEtcd(); err != nil {
		fmt.Fprintln(os.Stderr, "testdb: etcd:", err)
	}
	return code
}

// purged makes the first dockerServer call of a process purge leftovers.
var purged sync.Once

// purgeLeftovers removes the containers with this machine's and user's
// owner label that no live test binary uses: what a run killed before
// testdb.Main could release its containers (kill -9, a CI job cancelled)
// left behind. A container is in use while a live process has a user file
// for it, and that file is written under the container's lock together
// with its start, so one held here is never taken from under a binary
// that is still starting it. Nothing is purged with EnvDockerKeep=1,
// whose containers are meant to outlive their run.
func (e *engine) purgeLeftovers(ctx context.Context) error {
	if os.Getenv(EnvDockerKeep) == "1" {
		return nil
	}
	list, err := e.client.ListContainers(dc.ListContainersOptions{All: true, Context: ctx,
		Filters: map[string][]string{"label": {labelOwner + "=" + ownerID()}}})
	if err != nil {
		return fmt.Errorf("list containers labelled %s=%s: %w", labelOwner, ownerID(), err)
	}
	var errs []error
	for _, c := range list {
		if len(c.Names) == 0 || c.Labels[labelTest] == "" {
			continue
		}
		name := strings.TrimPrefix(c.Names[0], "/")
		unlock, err := lockUsers(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n, err := liveUsers(name)
		if err == nil && n == 0 {
			err = e.remove(ctx, c.ID)
		}
		unlock()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// dockerServer returns the address of a running server for spec, started
// if need be, and records this process as one of its users.
func dockerServer(ctx context.Context, spec containerSpec) (string, error) {
	wait, err := maxWait()
	if err != nil {
		return "", err
	}
	e, err := newEngine(ctx, "")
	if err != nil {
		return "", err
	}
	used.Lock()
	called := used.mainCalled
	used.Unlock()
	if !called {
		return "", errors.New("the test package's TestMain must call testdb.Main, or the containers would never be removed")
	}
	var perr error
	purged.Do(func() { perr = e.purgeLeftovers(ctx) })
	if perr != nil {
		return "", fmt.Errorf("purge the containers of killed runs: %w", perr)
	}
	name := containerName(spec)
	unlock, err := lockUsers(name)
	if err != nil {
		return "", err
	}
	defer unlock()
	addrs, created, err := e.start(ctx, spec, name)
	if err != nil {
		return "", err
	}
	addr, err := e.waitReady(ctx, spec, addrs, wait)
	if err != nil {
		c, _ := e.client.InspectContainerWithContext(name, ctx)
		return "", e.failed(ctx, c, created, err)
	}
	if err := addUser(name); err != nil {
		return "", err
	}
	used.Lock()
	used.list = append(used.list, usedContainer{e, name})
	used.Unlock()
	return addr, nil
}

// releaseAll drops this process from the users of each container it used
// and removes those no other live test binary uses.
func releaseAll(ctx context.Context) error {
	used.Lock()
	list := used.list
	used.list = nil
	used.Unlock()
	keep := os.Getenv(EnvDockerKeep) == "1"
	var errs []error
	for _, u := range list {
		unlock, err := lockUsers(u.name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		others, err := dropUser(u.name)
		if err == nil && others == 0 && !keep {
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err = u.e.remove(rctx, u.name)
			cancel()
		}
		unlock()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// The users of a container are files named by pid in a directory of the
// temp dir, changed only under a lock file beside it: starting a container
// and removing the last user's are then never interleaved across binaries.
func usersDir(name string) string {
	return filepath.Join(os.TempDir(), "gomogile-testdb", name+".users")
}

func lockUsers(name string) (unlock func(), err error) {
	dir := filepath.Dir(usersDir(name))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("testdb: %w", err)
	}
	return lockFile(filepath.Join(dir, name+".lock"))
}

func addUser(name string) error {
	dir := usersDir(name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("testdb: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, strconv.Itoa(os.Getpid())), nil, 0o600)
}

// dropUser removes this process from name's users, and those whose process
// is gone (a binary killed by go test's timeout), and reports how many remain.
func dropUser(name string) (int, error) {
	_ = os.Remove(filepath.Join(usersDir(name), strconv.Itoa(os.Getpid())))
	return liveUsers(name)
}

// liveUsers removes name's users whose process is gone and reports how
// many remain.
func liveUsers(name string) (int, error) {
	dir := usersDir(name)
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return 0, fmt.Errorf("testdb: %w", err)
	}
	n := 0
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || !processAlive(pid) {
			_ = os.Remove(filepath.Join(dir, ent.Name()))
			continue
		}
		n++
	}
	return n, nil
}
