package postgres

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
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
var passThrough = map[string]bool{
	"sslmode":                    true,
	"sslrootcert":                true,
	"sslcert":                    true,
	"sslkey":                     true,
	"sslpassword":                true,
	"sslsni":                     true,
	"sslnegotiation":             true,
	"sslcertmode":                true,
	"channel_binding":            true,
	"require_auth":               true,
	"krbsrvname":                 true,
	"krbspn":                     true,
	"passfile":                   true,
	"connect_timeout":            true,
	"target_session_attrs":       true,
	"application_name":           true,
	"options":                    true,
	"default_query_exec_mode":    true,
	"statement_cache_capacity":   true,
	"description_cache_capacity": true,
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
	for k, vs := range d.Params {
		if len(vs) != 1 {
			return nil, bad("parameter %s given %d times", k, len(vs))
		}
		v := vs[0]
		if passThrough[k] {
			kv = append(kv, k+"="+quoteValue(v))
			continue
		}
		known, err := lc.SetParam(k, v)
		if !known {
			return nil, bad("unknown parameter %q (have: %s)", k, knownParams())
		}
		if err != nil {
			return nil, bad("%s=%q: %v", k, v, err)
		}
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

func knownParams() string {
	names := slices.Clone(leaselock.Params)
	for k := range passThrough {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// quoteValue quotes a libpq keyword/value connection string value.
func quoteValue(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}
