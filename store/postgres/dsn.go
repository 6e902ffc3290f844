package postgres

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/sqlstore/leaselock"
)

// config is a DSN turned into what Open needs.
type config struct {
	conn  *pgx.ConnConfig
	locks leaselock.Config
}

// passThrough lists the DSN parameters handed to pgx unchanged: libpq
// connection settings that only say how to reach and authenticate to the
// server. target_session_attrs with a host list is libpq's failover: each
// connection (the pool's, the lock renewer's, the listener's) tries the
// hosts in turn and keeps the first that qualifies, so after a standby is
// promoted new connections find it. Runtime settings that would change
// what the SQL means (search_path, …) are not among them.
var passThrough = []string{
	"sslmode",
	"sslrootcert",
	"sslcert",
	"sslkey",
	"sslpassword",
	"sslsni",
	"sslnegotiation",
	"sslcertmode",
	"channel_binding",
	"require_auth",
	"krbsrvname",
	"krbspn",
	"passfile",
	"connect_timeout",
	"target_session_attrs",
	"application_name",
	"options",
	"default_query_exec_mode",
	"statement_cache_capacity",
	"description_cache_capacity",
}

// parseDSN validates d without connecting.
func parseDSN(d *store.DSN) (*config, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: postgres: "+format, append([]any{store.ErrBadDSN}, args...)...)
	}
	if d.Database == "" {
		return nil, bad("no database name")
	}
	hosts := d.AllHosts()
	if len(hosts) == 0 {
		hosts = []store.HostPort{{}}
	}
	hl := make([]string, len(hosts))
	pl := make([]string, len(hosts))
	for i, h := range hosts {
		hl[i] = h.Host
		if hl[i] == "" {
			hl[i] = "127.0.0.1"
		}
		pl[i] = strconv.Itoa(cmp.Or(h.Port, DefaultPort))
	}
	kv := []string{
		"host=" + quoteValue(strings.Join(hl, ",")),
		"port=" + quoteValue(strings.Join(pl, ",")),
		"dbname=" + quoteValue(d.Database),
	}
	if d.User != "" {
		kv = append(kv, "user="+quoteValue(d.User))
	}
	lc := leaselock.Config{Name: "postgres"}
	params := lc.Params()
	for _, k := range passThrough {
		params = append(params, store.Param{Names: []string{k}, Set: func(v string) error {
			kv = append(kv, k+"="+quoteValue(v))
			return nil
		}})
	}
	if err := d.ApplyParams("postgres", params...); err != nil {
		return nil, err
	}
	lc = lc.WithDefaults()
	// The password is set after parsing, so no error of pgx's can quote it.
	conn, err := pgx.ParseConfig(strings.Join(kv, " "))
	if err != nil {
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) && pe.Unwrap() != nil {
			return nil, bad("%v", pe.Unwrap())
		}
		return nil, bad("%v", err)
	}
	if d.Password != "" {
		conn.Password = d.Password
	}
	// The driver's notices and (when debugging) queries go to slog.Default.
	conn.Tracer = queryTracer{}
	conn.OnNotice = logNotice
	return &config{conn: conn, locks: lc}, nil
}

// quoteValue quotes a libpq keyword/value connection string value.
func quoteValue(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}
