package query_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
	"github.com/gomogile/gomogile/tracker/query"
)

// newEnv is an Env on a fresh SQLite store, with no workers: what a
// command needs, and no server.
func newEnv(t *testing.T) *query.Env {
	t.Helper()
	st, err := store.Open(t.Context(), "sqlite:///"+filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := query.Config{
		Cluster:        cluster.Settings{MinFreeMB: 100, DefaultMinDevCount: 2},
		RequestTimeout: 10 * time.Second,
	}
	return &query.Env{
		Store:   st,
		NS:      cluster.NewCache(st, time.Minute),
		Nodes:   cluster.NewNodes(cluster.NodeConfig{}, nil),
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Config:  cfg,
		Host:    "test-host",
		Uploads: query.NewUploads(cfg, st),
	}
}

// do runs the command name with args as the server would, from a client
// at 192.0.2.1.
func do(ctx context.Context, e *query.Env, name string, args query.Args) (*query.Reply, error) {
	c, ok := query.Lookup(name)
	if !ok {
		return nil, errors.New("no command " + name)
	}
	return c.Run(e, ctx, &query.Request{Cmd: name, Args: args, ClientIP: "192.0.2.1"})
}

// Commands run against an Env alone: create_domain and create_class write
// the store, get_domains reads them back through the namespace cache the
// writes invalidated, and a protocol error comes back as a *ProtoError.
func TestEnv_CommandsWithoutServer(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	if res, err := do(ctx, e, "create_domain", query.Args{"domain": "photos"}); err != nil || res.Get("domain") != "photos" {
		t.Fatalf("create_domain = %q, %v", res.Encode(), err)
	}
	if _, err := do(ctx, e, "create_class", query.Args{"domain": "photos", "class": "thumbs", "mindevcount": "3"}); err != nil {
		t.Fatalf("create_class: %v", err)
	}
	res, err := do(ctx, e, "get_domains", nil)
	if err != nil {
		t.Fatalf("get_domains: %v", err)
	}
	for k, want := range map[string]string{
		"domains":                  "1",
		"domain1":                  "photos",
		"domain1classes":           "2",
		"domain1class1name":        "default",
		"domain1class1mindevcount": "2", // default_mindevcount, from Config
		"domain1class2name":        "thumbs",
		"domain1class2mindevcount": "3",
		"domain1class2replpolicy":  "MultipleHosts()",
	} {
		if got := res.Get(k); got != want {
			t.Errorf("get_domains %s = %q; want %q (reply %s)", k, got, want, res.Encode())
		}
	}

	_, err = do(ctx, e, "create_domain", query.Args{"domain": "photos"})
	var pe *query.ProtoError
	if !errors.As(err, &pe) || pe.Code != "domain_exists" {
		t.Errorf("create_domain again: %v; want domain_exists", err)
	}
	_, err = do(ctx, e, "list_keys", query.Args{"domain": "photos"})
	if !errors.As(err, &pe) || pe.Code != "none_match" {
		t.Errorf("list_keys of an empty domain: %v; want none_match", err)
	}
}

// fsck_start writes the Env's hostname as fsck_host, and fsck_status
// reports it: the settings family reads and writes through the store.
func TestEnv_FsckStartRecordsHost(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	if _, err := do(ctx, e, "fsck_start", nil); err != nil {
		t.Fatalf("fsck_start: %v", err)
	}
	res, err := do(ctx, e, "fsck_status", nil)
	if err != nil {
		t.Fatalf("fsck_status: %v", err)
	}
	if res.Get("running") != "1" || res.Get("host") != "test-host" {
		t.Errorf("fsck_status = %s; want running=1, host=test-host", res.Encode())
	}
	_, err = do(ctx, e, "rebalance_start", nil)
	var pe *query.ProtoError
	if !errors.As(err, &pe) || pe.Code != "fsck_running" {
		t.Errorf("rebalance_start during fsck: %v; want fsck_running", err)
	}
}

// Every command has a category; none is left uncategorised.
func TestCommands_Categorised(t *testing.T) {
	cmds := query.Commands()
	if len(cmds) == 0 {
		t.Fatal("no commands")
	}
	for name, c := range cmds {
		if c.Cat != query.Client && c.Cat != query.Admin {
			t.Errorf("%s: category %v", name, c.Cat)
		}
		if c.Run == nil {
			t.Errorf("%s: no handler", name)
		}
	}
}
