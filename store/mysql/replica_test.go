package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
	"github.com/gomogile/gomogile/internal/testkit/replicatest"
	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/mysql"
)

// TestReplicas runs the read-replica test on a private MariaDB primary
// (binary log on) and an asynchronous replica of it, named as 2.73's
// `mogadm slave add` names it: in the slave settings. Root may write to
// the replica despite read_only, so the test can tell where a read was
// answered and whether anything of the Store's reached the replica.
func TestReplicas(t *testing.T) {
	if err := dbinstance.Available("mariadb"); err != nil {
		t.Skipf("private MariaDB: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	primary, err := dbinstance.StartMariaDBPrimary(ctx, dbinstance.MyOptions{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { primary.Cleanup() })
	replica, err := primary.StartReplica(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { replica.Cleanup() })
	rdb, err := sql.Open("mysql", replica.DriverDSN("test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })

	const maxLag = time.Second
	replicatest.Run(t, replicatest.Harness{
		Open: func(t *testing.T) *store.Store {
			s, err := store.Open(t.Context(), primary.DSN("test")+"?replica_max_lag="+maxLag.String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			// 2.73's slave list: DBI DSN|user|pass, and a new version.
			for k, v := range map[string]string{
				"slave_keys": "r1",
				"slave_r1":   fmt.Sprintf("DBI:mysql:database=test;host=127.0.0.1;port=%d|root|", replica.Port()),
			} {
				if err := s.SetServerSetting(t.Context(), k, v); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.IncrServerSetting(t.Context(), "slave_version", 1); err != nil {
				t.Fatal(err)
			}
			return s
		},
		MaxLag: maxLag,
		Pause:  replica.PauseReplication,
		Resume: replica.ResumeReplication,
		Kill:   replica.Kill,
		Start:  replica.Start,
		Exec: func(ctx context.Context, q string, args ...any) error {
			_, err := rdb.ExecContext(ctx, q, args...)
			return err
		},
		Digest: func(ctx context.Context) (string, error) {
			rows, err := rdb.QueryContext(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'test' ORDER BY table_name")
			if err != nil {
				return "", err
			}
			var names []string
			for rows.Next() {
				var n string
				if err := rows.Scan(&n); err != nil {
					rows.Close()
					return "", err
				}
				names = append(names, "`"+n+"`")
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return "", err
			}
			rows, err = rdb.QueryContext(ctx, "CHECKSUM TABLE "+strings.Join(names, ", "))
			if err != nil {
				return "", err
			}
			defer rows.Close()
			var b strings.Builder
			for rows.Next() {
				var n string
				var sum sql.NullInt64
				if err := rows.Scan(&n, &sum); err != nil {
					return "", err
				}
				fmt.Fprintf(&b, "%s=%d ", n, sum.Int64)
			}
			return b.String(), rows.Err()
		},
		Locked: func(ctx context.Context, name string) (bool, error) {
			var holder sql.NullInt64
			err := rdb.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", mysql.ServerLockName("test", name)).Scan(&holder)
			return holder.Valid, err
		},
	})
}
