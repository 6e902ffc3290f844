package dbinstance

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

// GaleraOptions configure StartGalera. The zero value starts three nodes.
type GaleraOptions struct {
	// Nodes is how many nodes StartGalera starts; 0 means 3. AddNode adds
	// more later.
	Nodes int
	// Settings are extra mariadbd options of every node, as in MyOptions;
	// they override the defaults, the wsrep ones included.
	Settings map[string]string
	// ProviderOptions are extra wsrep_provider_options ("name=value;…"),
	// after (and so overriding) the node's own.
	ProviderOptions string
	// Dir is the parent of the nodes' directories; "" = os.TempDir().
	Dir string
	// Logf, if set, gets one line per lifecycle step.
	Logf func(format string, args ...any)
}

// galeraProviders are where distributions install the Galera 4 library.
var galeraProviders = []string{
	"/usr/lib/galera/libgalera_smm.so",     // Debian, Ubuntu
	"/usr/lib/libgalera_smm.so",            // older Debian
	"/usr/lib64/galera-4/libgalera_smm.so", // Fedora, RHEL
	"/usr/lib64/galera/libgalera_smm.so",
}

// galeraProvider finds the Galera library, or says what to install.
func galeraProvider() (string, error) {
	for _, p := range galeraProviders {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: no Galera library (libgalera_smm.so) in %s: %s", ErrUnavailable, strings.Join(galeraProviders, ", "), installHint)
}

// Galera is a private MariaDB Galera cluster: nodes on loopback, each a
// MariaDB instance of its own (directory, mysqld port, replication port,
// IST and SST ports), joined by rsync state transfer.
type Galera struct {
	o        GaleraOptions
	provider string
	acct     *account
	name     string // wsrep_cluster_name, unique, so no two clusters merge

	mu    sync.Mutex
	nodes []*GaleraNode
}

// GaleraNode is one node of a Galera cluster. Its MariaDB methods (Addr,
// DSN, Kill, Stop, …) work as on a lone server; Start rejoins the cluster.
type GaleraNode struct {
	*MariaDB
	g     *Galera
	index int // from 1, in the order the nodes were made
	gcomm int // the group communication (replication) port
}

// StartGalera starts a cluster of o.Nodes nodes: the first bootstraps a
// new cluster (--wsrep-new-cluster), lets root in over TCP with an empty
// password and creates database "test"; the others join it one at a time,
// each receiving the first one's data by rsync. It returns once every node
// is synced and counts all of them in wsrep_cluster_size. Call Cleanup
// when done.
//
// When the process runs as root the nodes run as the "mysql" OS user:
// the rsync state transfer refuses to run as root.
func StartGalera(ctx context.Context, o GaleraOptions) (*Galera, error) {
	if err := Available("galera"); err != nil {
		return nil, err
	}
	n := o.Nodes
	if n == 0 {
		n = 3
	}
	if n < 1 {
		return nil, fmt.Errorf("dbinstance: galera: %d nodes", n)
	}
	provider, _ := galeraProvider()
	acct, err := serviceAccount("mysql")
	if err != nil {
		return nil, err
	}
	var id [6]byte
	rand.Read(id[:])
	g := &Galera{o: o, provider: provider, acct: acct, name: "gomogile-" + hex.EncodeToString(id[:])}
	t0 := time.Now()
	// Every node is made (ports chosen) before the first starts, so each
	// one's cluster address names them all.
	for range n {
		if _, err := g.newNode(); err != nil {
			g.Cleanup()
			return nil, err
		}
	}
	first := g.nodes[0]
	err = first.start(ctx, "--wsrep-new-cluster")
	if err == nil {
		err = first.waitSynced(ctx)
	}
	if err == nil {
		err = first.grantTCP(ctx)
	}
	if err != nil {
		g.Cleanup()
		return nil, err
	}
	first.logf("galera node 1 of %d on %s bootstrapped in %v", n, first.Addr(), time.Since(t0).Round(time.Millisecond))
	// One joiner at a time: a donor serves one state transfer at once.
	for _, nd := range g.nodes[1:] {
		if err := nd.Start(ctx); err != nil {
			g.Cleanup()
			return nil, err
		}
	}
	if err := g.WaitSize(ctx, n); err != nil {
		g.Cleanup()
		return nil, err
	}
	first.logf("galera cluster %s of %d nodes ready in %v", g.name, n, time.Since(t0).Round(time.Millisecond))
	return g, nil
}

// newNode makes a node (not started) and adds it to g.nodes.
func (g *Galera) newNode() (*GaleraNode, error) {
	my := MyOptions{Dir: g.o.Dir, Logf: g.o.Logf, Settings: map[string]string{}}
	m, err := newMariaDB(my, g.acct)
	if err != nil {
		return nil, err
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			m.Cleanup()
			return nil, err
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	nd := &GaleraNode{MariaDB: m, g: g, index: len(g.nodes) + 1, gcomm: ports[0]}
	g.nodes = append(g.nodes, nd)
	addrs := make([]string, len(g.nodes))
	for i, o := range g.nodes {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", o.gcomm)
	}
	popts := fmt.Sprintf("gmcast.listen_addr=tcp://127.0.0.1:%d;ist.recv_addr=127.0.0.1:%d;gcache.size=32M", nd.gcomm, ports[1])
	if g.o.ProviderOptions != "" {
		popts += ";" + g.o.ProviderOptions
	}
	set := map[string]string{
		"wsrep-on":                    "ON",
		"wsrep-provider":              g.provider,
		"wsrep-provider-options":      popts,
		"wsrep-cluster-name":          g.name,
		"wsrep-cluster-address":       "gcomm://" + strings.Join(addrs, ","),
		"wsrep-node-name":             "node" + strconv.Itoa(nd.index),
		"wsrep-node-address":          fmt.Sprintf("127.0.0.1:%d", nd.gcomm),
		"wsrep-node-incoming-address": m.Addr(),
		"wsrep-sst-method":            "rsync",
		"wsrep-sst-receive-address":   fmt.Sprintf("127.0.0.1:%d", ports[2]),
		// What Galera requires of the server.
		"binlog-format":            "ROW",
		"default-storage-engine":   "InnoDB",
		"innodb-autoinc-lock-mode": "2",
	}
	for k, v := range g.o.Settings {
		set[k] = v
	}
	m.o.Settings = set
	return nd, nil
}

// AddNode makes a new node, starts it joining the cluster (a full state
// transfer from a running node) and returns once it is synced and every
// running node counts it.
func (g *Galera) AddNode(ctx context.Context) (*GaleraNode, error) {
	nd, err := g.newNode()
	if err != nil {
		return nil, err
	}
	if err := nd.Start(ctx); err != nil {
		return nil, err
	}
	return nd, g.WaitSize(ctx, g.running())
}

// running counts the nodes whose mariadbd is alive.
func (g *Galera) running() int {
	n := 0
	for _, nd := range g.Nodes() {
		if nd.Running() {
			n++
		}
	}
	return n
}

// Nodes are the cluster's nodes, running or not, in the order they were
// made; node 1 bootstrapped the cluster.
func (g *Galera) Nodes() []*GaleraNode {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*GaleraNode(nil), g.nodes...)
}

// WaitSize waits until every running node is synced and reports
// wsrep_cluster_size n.
func (g *Galera) WaitSize(ctx context.Context, n int) error {
	for _, nd := range g.Nodes() {
		if !nd.Running() {
			continue
		}
		if err := nd.waitFor(ctx, func(st WsrepStatus) bool { return st.Synced() && st.ClusterSize == n }); err != nil {
			return fmt.Errorf("dbinstance: galera: wait for %d nodes: %w", n, err)
		}
	}
	return nil
}

// Cleanup kills every node and removes their directories.
func (g *Galera) Cleanup() error {
	var first error
	for _, nd := range g.Nodes() {
		err := nd.Kill()
		if rerr := os.RemoveAll(nd.Dir()); err == nil {
			err = rerr
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Index is the node's number in its cluster, from 1.
func (n *GaleraNode) Index() int { return n.index }

// Start starts the node's mariadbd (again), joining the cluster (by an
// incremental or a full state transfer), and returns once it is synced.
func (n *GaleraNode) Start(ctx context.Context) error {
	t0 := time.Now()
	err := n.start(ctx)
	if err == nil {
		err = n.waitSynced(ctx)
	}
	if err != nil {
		return err
	}
	n.logf("galera node %d on %s joined in %v", n.index, n.Addr(), time.Since(t0).Round(time.Millisecond))
	return nil
}

// WsrepStatus is what a node says of its cluster membership.
type WsrepStatus struct {
	ClusterSize int    // wsrep_cluster_size
	Ready       bool   // wsrep_ready: the node accepts queries
	State       string // wsrep_local_state_comment: Synced, Joining, Donor/Desynced, …
	Status      string // wsrep_cluster_status: Primary, non-Primary, Disconnected
}

// Synced reports a node in the primary component, synced and accepting
// queries.
func (s WsrepStatus) Synced() bool {
	return s.Ready && s.State == "Synced" && s.Status == "Primary"
}

// Wsrep reads the node's wsrep status over its socket.
func (n *GaleraNode) Wsrep(ctx context.Context) (WsrepStatus, error) {
	db, err := n.socketDB()
	if err != nil {
		return WsrepStatus{}, err
	}
	defer db.Close()
	return readWsrep(ctx, db)
}

func readWsrep(ctx context.Context, db *sql.DB) (WsrepStatus, error) {
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_cluster_size', 'wsrep_ready', 'wsrep_local_state_comment', 'wsrep_cluster_status')")
	if err != nil {
		return WsrepStatus{}, fmt.Errorf("dbinstance: galera: %w", err)
	}
	defer rows.Close()
	var st WsrepStatus
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return WsrepStatus{}, fmt.Errorf("dbinstance: galera: %w", err)
		}
		switch strings.ToLower(k) {
		case "wsrep_cluster_size":
			st.ClusterSize, _ = strconv.Atoi(v)
		case "wsrep_ready":
			st.Ready = v == "ON"
		case "wsrep_local_state_comment":
			st.State = v
		case "wsrep_cluster_status":
			st.Status = v
		}
	}
	if err := rows.Err(); err != nil {
		return WsrepStatus{}, fmt.Errorf("dbinstance: galera: %w", err)
	}
	return st, nil
}

// WaitDatabase waits until every node knows database: the other nodes
// apply a CREATE DATABASE after the node that ran it answered, and a
// Store opened on one of them before then fails with 1049, "Unknown
// database".
func (g *Galera) WaitDatabase(ctx context.Context, database string) error {
	for _, n := range g.Nodes() {
		db, err := n.socketDB()
		if err != nil {
			return err
		}
		err = waitSchema(ctx, db, database)
		db.Close()
		if err != nil {
			return fmt.Errorf("dbinstance: galera node %d: %w", n.Index(), err)
		}
	}
	return nil
}

// waitSchema polls until db's server knows database.
func waitSchema(ctx context.Context, db *sql.DB, database string) error {
	for {
		var n int
		err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", database).Scan(&n)
		if err == nil && n == 1 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("database %s not seen: %w (last error %v)", database, ctx.Err(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// socketDB is a pool on the node's socket as root.
func (n *GaleraNode) socketDB() (*sql.DB, error) {
	cfg := gomysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "unix", n.sock
	cfg.Timeout = 2 * time.Second
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("dbinstance: galera: %w", err)
	}
	return sql.OpenDB(conn), nil
}

// waitSynced waits until the node is synced in the primary component.
func (n *GaleraNode) waitSynced(ctx context.Context) error {
	return n.waitFor(ctx, WsrepStatus.Synced)
}

// waitFor polls the node's status until ok holds, the node exits or ctx
// ends.
func (n *GaleraNode) waitFor(ctx context.Context, ok func(WsrepStatus) bool) error {
	db, err := n.socketDB()
	if err != nil {
		return err
	}
	defer db.Close()
	var st WsrepStatus
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err = readWsrep(actx, db)
		cancel()
		if err == nil && ok(st) {
			return nil
		}
		n.mu.Lock()
		pr := n.proc
		n.mu.Unlock()
		var exited <-chan struct{}
		if pr != nil {
			exited = pr.exited
		}
		select {
		case <-exited:
			return fmt.Errorf("dbinstance: galera node %d on %s exited:\n%s", n.index, n.Addr(), tail(n.logPath()))
		case <-ctx.Done():
			return fmt.Errorf("dbinstance: galera node %d on %s: %w (status %+v, last error %v)", n.index, n.Addr(), ctx.Err(), st, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
