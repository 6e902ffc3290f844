package store

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultOpTimeout is the deadline every Store call gets when the DSN has no
// op_timeout and the caller's context none earlier.
const DefaultOpTimeout = 10 * time.Second

// DSN is a parsed data source name. Backends read the fields they know and
// must reject Params they do not understand, so a typo is an error rather
// than a silently ignored setting.
type DSN struct {
	Driver   string // lower-case backend name: "sqlite", "mysql", "postgres", …
	User     string
	Password string
	Host     string // host name, IP, or a Unix socket directory/path
	Port     int    // 0 = the backend's default
	Database string // database name; for SQLite the file path
	Params   url.Values
	// OpTimeout is the op_timeout parameter, common to every backend and
	// taken out of Params: the default deadline of each Store call whose
	// context has none earlier (a Lock call gets its wait timeout plus
	// this). DefaultOpTimeout when the DSN does not set it; 0
	// (op_timeout=0) means no default deadline.
	OpTimeout time.Duration
}

// dbiDrivers maps Perl DBI driver names to ours.
var dbiDrivers = map[string]string{
	"mysql":   "mysql",
	"mariadb": "mysql",
	"pg":      "postgres",
	"sqlite":  "sqlite",
}

// dbiKeys maps DBI attribute names to DSN fields; others become Params.
var dbiKeys = map[string]string{
	"database": "db", "dbname": "db", "db": "db",
	"host": "host", "hostname": "host",
	"port":     "port",
	"user":     "user",
	"password": "password",
}

// ParseDSN accepts
//
//	sqlite:///abs/path.db   sqlite:relative/path.db   sqlite::memory: is refused
//	mysql://user:pass@host:3306/db?param=value
//	postgres://user:pass@host:5432/db?param=value (also postgresql://)
//	DBI:mysql:database=db;host=h;port=3306      DBI:mysql:db
//	DBI:Pg:dbname=db;host=h;port=5432
//	DBI:SQLite:dbname=/path.db                  DBI:SQLite:/path.db
//
// and any other schename://… form for backends registered elsewhere.
//
// The parameter op_timeout (a Go duration, or whole seconds; default
// [DefaultOpTimeout], 0 for none) is read here for every backend and moved
// to DSN.OpTimeout.
func ParseDSN(s string) (*DSN, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%w: empty DSN", ErrBadDSN)
	}
	var d *DSN
	var err error
	if len(s) >= 4 && strings.EqualFold(s[:4], "dbi:") {
		d, err = parseDBI(s)
	} else {
		d, err = parseURL(s)
	}
	if err != nil {
		return nil, err
	}
	if err := d.takeOpTimeout(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *DSN) takeOpTimeout() error {
	d.OpTimeout = DefaultOpTimeout
	vs, ok := d.Params["op_timeout"]
	if !ok {
		return nil
	}
	delete(d.Params, "op_timeout")
	if len(vs) != 1 {
		return fmt.Errorf("%w: parameter op_timeout given %d times", ErrBadDSN, len(vs))
	}
	v := strings.TrimSpace(vs[0])
	dur, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return fmt.Errorf("%w: op_timeout=%q is neither a duration nor whole seconds", ErrBadDSN, vs[0])
		}
		dur = time.Duration(n) * time.Second
	}
	if dur < 0 {
		return fmt.Errorf("%w: op_timeout=%q is negative", ErrBadDSN, vs[0])
	}
	d.OpTimeout = dur
	return nil
}

func parseDBI(s string) (*DSN, error) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) < 3 || parts[1] == "" {
		return nil, fmt.Errorf("%w: %q: want DBI:<driver>:<attributes>", ErrBadDSN, s)
	}
	d := &DSN{Params: url.Values{}}
	if drv, ok := dbiDrivers[strings.ToLower(parts[1])]; ok {
		d.Driver = drv
	} else {
		d.Driver = strings.ToLower(parts[1])
	}
	for _, attr := range strings.Split(parts[2], ";") {
		attr = strings.TrimSpace(attr)
		if attr == "" {
			continue
		}
		k, v, hasEq := strings.Cut(attr, "=")
		if !hasEq {
			// DBI allows the bare database name (DBI:mysql:mogilefs).
			if d.Database != "" {
				return nil, fmt.Errorf("%w: %q: attribute %q has no '='", ErrBadDSN, s, attr)
			}
			d.Database = attr
			continue
		}
		k = strings.TrimSpace(k)
		switch dbiKeys[strings.ToLower(k)] {
		case "db":
			d.Database = v
		case "host":
			d.Host = v
		case "port":
			p, err := parsePort(v)
			if err != nil {
				return nil, fmt.Errorf("%w: %q: %v", ErrBadDSN, s, err)
			}
			d.Port = p
		case "user":
			d.User = v
		case "password":
			d.Password = v
		default:
			d.Params.Add(k, v)
		}
	}
	return d, nil
}

func parseURL(s string) (*DSN, error) {
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok || scheme == "" {
		return nil, fmt.Errorf("%w: %q: want scheme://… or DBI:driver:…", ErrBadDSN, s)
	}
	scheme = strings.ToLower(scheme)
	d := &DSN{Driver: scheme, Params: url.Values{}}
	switch scheme {
	case "postgresql":
		d.Driver = "postgres"
	case "sqlite3", "file":
		d.Driver = "sqlite"
	}
	if d.Driver == "sqlite" && !strings.HasPrefix(rest, "//") {
		// sqlite:relative/path.db?opt=v
		path, query, _ := strings.Cut(rest, "?")
		q, err := url.ParseQuery(query)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrBadDSN, s, err)
		}
		d.Database, d.Params = path, q
		return d, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrBadDSN, redactURL(s), err)
	}
	if u.Opaque != "" {
		return nil, fmt.Errorf("%w: %q: want %s://…", ErrBadDSN, redactURL(s), scheme)
	}
	if u.User != nil {
		d.User = u.User.Username()
		d.Password, _ = u.User.Password()
	}
	d.Host = u.Hostname()
	if p := u.Port(); p != "" {
		if d.Port, err = parsePort(p); err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrBadDSN, redactURL(s), err)
		}
	}
	if d.Driver == "sqlite" {
		// sqlite:///abs/path and sqlite://host/… (host is not meaningful).
		d.Database = u.Host + u.Path
		d.Host = ""
	} else {
		d.Database = strings.TrimPrefix(u.Path, "/")
	}
	d.Params = u.Query()
	return d, nil
}

func parsePort(p string) (int, error) {
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 || n > 65535 {
		return 0, fmt.Errorf("bad port %q", p)
	}
	return n, nil
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// Redacted prints the DSN as a URL with the password hidden, for logs and
// error messages.
func (d *DSN) Redacted() string {
	q := url.Values{}
	for k, v := range d.Params {
		q[k] = v
	}
	if d.OpTimeout != DefaultOpTimeout {
		q.Set("op_timeout", d.OpTimeout.String())
	}
	u := url.URL{Scheme: d.Driver, RawQuery: q.Encode()}
	if d.Driver == "sqlite" {
		tail := ""
		if len(q) > 0 {
			tail = "?" + q.Encode()
		}
		if strings.HasPrefix(d.Database, "/") {
			return "sqlite://" + d.Database + tail // round-trips through ParseDSN
		}
		return "sqlite:" + d.Database + tail
	}
	if d.User != "" {
		if d.Password != "" {
			u.User = url.UserPassword(d.User, "xxxxx")
		} else {
			u.User = url.User(d.User)
		}
	}
	u.Host = d.Host
	if d.Port != 0 {
		u.Host += ":" + strconv.Itoa(d.Port)
	}
	u.Path = "/" + d.Database
	return u.String()
}
