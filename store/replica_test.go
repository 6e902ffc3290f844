package store_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// TestParseDSN_Replicas: replica parameters are taken out of Params, each
// parsed as a DSN of the same backend; a bad one is a DSN error.
func TestParseDSN_Replicas(t *testing.T) {
	d, err := store.ParseDSN("pg://u@primary/db?replica=" + url.QueryEscape("pg://r:pw@replica1/db?sslmode=disable") +
		"&replica=" + url.QueryEscape("DBI:pg:dbname=db;host=replica2") + "&replica_max_lag=500ms&x=1")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Replicas) != 2 || d.Replicas[0].Host != "replica1" || d.Replicas[0].Password != "pw" ||
		d.Replicas[0].Params.Get("sslmode") != "disable" || d.Replicas[1].Host != "replica2" {
		t.Errorf("replicas %+v", d.Replicas)
	}
	if d.ReplicaMaxLag != 500*time.Millisecond || d.Params.Has("replica") || d.Params.Has("replica_max_lag") || d.Params.Get("x") != "1" {
		t.Errorf("lag %v, params %v", d.ReplicaMaxLag, d.Params)
	}
	if d, _ := store.ParseDSN("pg://u@primary/db"); d.ReplicaMaxLag != 0 || d.Replicas != nil {
		t.Errorf("defaults: %v %v", d.ReplicaMaxLag, d.Replicas)
	}
	for _, bad := range []string{
		"pg://h/db?replica=" + url.QueryEscape("other://h/db"),               // another backend
		"pg://h/db?replica=" + url.QueryEscape("pg://h/db?lock_dsn=x"),       // its own lock service
		"pg://h/db?replica=" + url.QueryEscape("pg://h/db?op_timeout=never"), // bad in itself
		"pg://h/db?replica_max_lag=0",
		"pg://h/db?replica_max_lag=soon",
		"pg://h/db?replica_max_lag=1&replica_max_lag=2",
	} {
		if _, err := store.ParseDSN(bad); !errors.Is(err, store.ErrBadDSN) {
			t.Errorf("ParseDSN(%q) = %v; want ErrBadDSN", bad, err)
		}
	}
}

// TestSlaveDSN: 2.73's slave settings hold "DSN|user|pass".
func TestSlaveDSN(t *testing.T) {
	d, err := store.SlaveDSN("mysql", "DBI:mysql:database=mogilefs;host=replica;port=3307|mogile|se|cret")
	if !errors.Is(err, store.ErrBadDSN) {
		t.Errorf("a value of four fields: %v %v; want ErrBadDSN", d, err)
	}
	d, err = store.SlaveDSN("mysql", "DBI:mysql:database=mogilefs;host=replica;port=3307|mogile|secret")
	if err != nil {
		t.Fatal(err)
	}
	if d.Host != "replica" || d.Port != 3307 || d.Database != "mogilefs" || d.User != "mogile" || d.Password != "secret" {
		t.Errorf("%+v", d)
	}
	if _, err := store.SlaveDSN("postgres", "DBI:mysql:mogilefs|u|p"); !errors.Is(err, store.ErrBadDSN) {
		t.Errorf("a MySQL slave of a PostgreSQL database: %v; want ErrBadDSN", err)
	}
}

// TestAllowReplica marks a context, and only that one.
func TestAllowReplica(t *testing.T) {
	ctx := context.Background()
	if store.ReplicaAllowed(ctx) || !store.ReplicaAllowed(store.AllowReplica(ctx)) {
		t.Error("AllowReplica/ReplicaAllowed disagree")
	}
}
