package store

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultOpTimeout is the deadline every Store call gets when the DSN has no
// op_timeout and the caller's context none earlier.
const DefaultOpTimeout = 10 * time.Second

// DefaultMaxIdleConns is how many idle database connections a Store keeps
// when the DSN has no max_idle_conns: enough for a program making a few
// calls at once (database/sql's own default of 2 makes every third
// concurrent call open, and for TLS handshake, a new connection). The
// tracker sets max_idle_conns from its concurrency instead.
const DefaultMaxIdleConns = 8

// DSN is a parsed data source name. Backends read the fields they know and
// must reject Params they do not understand, so a typo is an error rather
// than a silently ignored setting.
type DSN struct {
	Driver   string // lower-case backend name: "sqlite", "mysql", "postgres", …
	User     string
	Password string
	Host     string // host name, IP, or a Unix socket directory/path
	Port     int    // 0 = the backend's default
	// Hosts is every host the DSN names, in order; Host and Port are
	// Hosts[0]. A backend that connects to one server only refuses more
	// than one; PostgreSQL tries them in turn (libpq's multi-host
	// failover, see target_session_attrs).
	Hosts    []HostPort
	Database string // database name; for SQLite the file path
	Params   url.Values
	// OpTimeout is the op_timeout parameter, common to every backend and
	// taken out of Params: the default deadline of each Store call whose
	// context has none earlier (a Lock call gets its wait timeout plus
	// this). DefaultOpTimeout when the DSN does not set it; 0
	// (op_timeout=0) means no default deadline.
	OpTimeout time.Duration
	// MaxIdleConns and MaxOpenConns are the parameters max_idle_conns and
	// max_open_conns, common to every backend and taken out of Params: the
	// Store's database/sql pool limits (SetMaxIdleConns, SetMaxOpenConns).
	// 0 = not given: DefaultMaxIdleConns idle, no limit on open
	// connections. A program that knows its concurrency (the tracker:
	// query_jobs plus its workers) sets MaxIdleConns to it when the DSN
	// does not.
	MaxIdleConns int
	MaxOpenConns int
}

// AllHosts is the host list to connect to: Hosts, whose first entry is
// Host and Port (so a caller that amends those two changes the first host),
// or Host and Port alone when Hosts is empty; nil when the DSN names no
// host at all.
func (d *DSN) AllHosts() []HostPort {
	if len(d.Hosts) == 0 {
		if d.Host == "" && d.Port == 0 {
			return nil
		}
		return []HostPort{{d.Host, d.Port}}
	}
	hs := slices.Clone(d.Hosts)
	hs[0] = HostPort{d.Host, d.Port}
	return hs
}

// HostPort is one entry of a DSN's host list.
type HostPort struct {
	Host string // name, IP (IPv6 without brackets) or Unix socket path; "" = default
	Port int    // 0 = the backend's default
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
//	DBI:mysql:db:host=h     DBI:mysql:db:h:3306  (DBD::mysql: ':' or ';', positional db, host, port)
//	DBI:Pg:dbname=db;host=h;port=5432
//	postgres://u@a:5432,b:5432/db?target_session_attrs=read-write
//	DBI:Pg:dbname=db;host=a,b;port=5432,5432     (host lists, see DSN.Hosts)
//	DBI:SQLite:dbname=/path.db                  DBI:SQLite:/path.db
//
// and any other scheme://… form for backends registered elsewhere. The
// "dbi:" prefix and driver names are case-insensitive; database, db and
// dbname are one DBI attribute. A URL host is a name, an IP ([v6] in
// brackets) or a %2F-escaped socket path. No error shows the password.
//
// The parameter op_timeout (a Go duration, or whole seconds; default
// [DefaultOpTimeout], 0 for none) is read here for every backend and moved
// to DSN.OpTimeout; max_idle_conns and max_open_conns (positive integers)
// to DSN.MaxIdleConns and DSN.MaxOpenConns.
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
	for _, p := range []struct {
		name string
		dst  *int
	}{{"max_idle_conns", &d.MaxIdleConns}, {"max_open_conns", &d.MaxOpenConns}} {
		if err := d.takeCount(p.name, p.dst); err != nil {
			return nil, err
		}
	}
	if d.MaxOpenConns > 0 && d.MaxIdleConns > d.MaxOpenConns {
		return nil, fmt.Errorf("%w: max_idle_conns=%d above max_open_conns=%d", ErrBadDSN, d.MaxIdleConns, d.MaxOpenConns)
	}
	return d, nil
}

// takeCount moves the positive integer parameter name out of Params.
func (d *DSN) takeCount(name string, dst *int) error {
	vs, ok := d.Params[name]
	if !ok {
		return nil
	}
	delete(d.Params, name)
	if len(vs) != 1 {
		return fmt.Errorf("%w: parameter %s given %d times", ErrBadDSN, name, len(vs))
	}
	n, err := strconv.Atoi(strings.TrimSpace(vs[0]))
	if err != nil || n < 1 {
		return fmt.Errorf("%w: %s=%q is not a positive integer", ErrBadDSN, name, vs[0])
	}
	*dst = n
	return nil
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
		return nil, fmt.Errorf("%w: %s: want DBI:<driver>:<attributes>", ErrBadDSN, redactRaw(s))
	}
	d := &DSN{Params: url.Values{}}
	if drv, ok := dbiDrivers[strings.ToLower(parts[1])]; ok {
		d.Driver = drv
	} else {
		d.Driver = strings.ToLower(parts[1])
	}
	var hosts, ports string
	// DBD::mysql splits its attributes at ':' as well as ';' and takes
	// bare ones as database, host and port in that order
	// (DBI:mysql:mogilefs:db1:3306, or the sample config's
	// DBI:mysql:mogilefs:host=127.0.0.1); the other drivers take ';' and
	// one bare database name (a path for SQLite).
	seps := ";"
	positional := []string{"db"}
	if d.Driver == "mysql" {
		seps = ";:"
		positional = []string{"db", "host", "port"}
	}
	attrs := splitAttrs(parts[2], seps)
	if d.Driver == "sqlite" && !strings.Contains(parts[2], "=") {
		attrs = []string{parts[2]} // a bare path may hold ';'
	}
	for _, attr := range attrs {
		attr = strings.TrimSpace(attr)
		if attr == "" {
			continue
		}
		k, v, hasEq := strings.Cut(attr, "=")
		if !hasEq {
			if len(positional) == 0 {
				return nil, fmt.Errorf("%w: %s: attribute %q has no '='", ErrBadDSN, redactRaw(s), attr)
			}
			k, v = positional[0], attr
			positional = positional[1:]
		}
		k = strings.TrimSpace(k)
		switch dbiKeys[strings.ToLower(k)] {
		case "db":
			d.Database = v
		case "host":
			hosts = v
		case "port":
			ports = v
		case "user":
			d.User = v
		case "password":
			d.Password = v
		default:
			d.Params.Add(k, v)
		}
	}
	if err := d.setHosts(hosts, ports); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadDSN, redactRaw(s), err)
	}
	return d, nil
}

// splitAttrs splits s at any of seps outside brackets, so that an IPv6
// host ([::1]) survives ':' as a separator.
func splitAttrs(s, seps string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch {
		case r == '[':
			depth++
		case r == ']' && depth > 0:
			depth--
		case depth == 0 && strings.ContainsRune(seps, r):
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// setHosts fills Hosts, Host and Port from DBI's host=a,b and port=p1,p2
// (libpq's lists: one port for every host, or one per host).
func (d *DSN) setHosts(hosts, ports string) error {
	if hosts == "" && ports == "" {
		return nil
	}
	hl := strings.Split(hosts, ",")
	var pl []string
	if ports != "" {
		pl = strings.Split(ports, ",")
	}
	if len(pl) > 1 && len(pl) != len(hl) {
		return fmt.Errorf("%d ports for %d hosts", len(pl), len(hl))
	}
	for i, h := range hl {
		h = strings.TrimSpace(h)
		if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
			h = h[1 : len(h)-1]
		}
		hp := HostPort{Host: h}
		p := ""
		switch len(pl) {
		case 0:
		case 1:
			p = pl[0]
		default:
			p = pl[i]
		}
		if p = strings.TrimSpace(p); p != "" {
			n, err := parsePort(p)
			if err != nil {
				return err
			}
			hp.Port = n
		}
		d.Hosts = append(d.Hosts, hp)
	}
	d.Host, d.Port = d.Hosts[0].Host, d.Hosts[0].Port
	return nil
}

// parseURL reads scheme://[user[:password]@]host[:port][,host[:port]…]/path?query.
// It does not use net/url for the authority: that takes one host only, and
// refuses the %-escaped socket paths libpq accepts (%2Fvar%2Frun%2Fpostgresql).
func parseURL(s string) (*DSN, error) {
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok || scheme == "" || strings.ContainsAny(scheme, "/?@") {
		return nil, fmt.Errorf("%w: %s: want scheme://… or DBI:driver:…", ErrBadDSN, redactRaw(s))
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
			return nil, fmt.Errorf("%w: %s: %v", ErrBadDSN, redactRaw(s), err)
		}
		d.Database, d.Params = path, q
		return d, nil
	}
	if !strings.HasPrefix(rest, "//") {
		return nil, fmt.Errorf("%w: %s: want %s://…", ErrBadDSN, redactRaw(s), scheme)
	}
	rest = rest[2:]
	if strings.Contains(rest, "#") {
		return nil, fmt.Errorf("%w: %s: '#' must be escaped as %%23", ErrBadDSN, redactRaw(s))
	}
	auth, tail := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		auth, tail = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(auth, '@'); i >= 0 {
		user, pass, hasPass := strings.Cut(auth[:i], ":")
		var err error
		if d.User, err = url.PathUnescape(user); err != nil {
			return nil, fmt.Errorf("%w: %s: bad escape in the user name", ErrBadDSN, redactRaw(s))
		}
		if hasPass {
			if d.Password, err = url.PathUnescape(pass); err != nil {
				return nil, fmt.Errorf("%w: %s: bad escape in the password", ErrBadDSN, redactRaw(s))
			}
		}
		auth = auth[i+1:]
	}
	if err := d.parseHostList(auth); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadDSN, d.Redacted(), err)
	}
	path, query, _ := strings.Cut(tail, "?")
	path, err := url.PathUnescape(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadDSN, d.Redacted(), err)
	}
	if d.Params, err = url.ParseQuery(query); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadDSN, d.Redacted(), err)
	}
	if d.Driver == "sqlite" {
		// sqlite:///abs/path and sqlite://host/… (host is not meaningful).
		d.Database = auth + path
		d.Host, d.Port, d.Hosts = "", 0, nil
	} else {
		d.Database = strings.TrimPrefix(path, "/")
	}
	return d, nil
}

// parseHostList reads a URL authority's host list: host, host:port,
// [v6], [v6]:port, or a %-escaped socket path, separated by commas.
func (d *DSN) parseHostList(auth string) error {
	if auth == "" {
		return nil
	}
	for _, h := range strings.Split(auth, ",") {
		var hp HostPort
		port := ""
		if strings.HasPrefix(h, "[") {
			end := strings.IndexByte(h, ']')
			if end < 0 {
				return fmt.Errorf("host %q: missing ']'", h)
			}
			hp.Host = h[1:end]
			if t := h[end+1:]; t != "" {
				if t[0] != ':' {
					return fmt.Errorf("host %q: junk after ']'", h)
				}
				port = t[1:]
				if port == "" {
					return fmt.Errorf("host %q: empty port", h)
				}
			}
		} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
			hp.Host, port = h[:i], h[i+1:]
			if strings.Contains(hp.Host, ":") {
				return fmt.Errorf("host %q: an IPv6 address needs brackets ([%s])", h, h)
			}
			if port == "" {
				return fmt.Errorf("host %q: empty port", h)
			}
		} else {
			hp.Host = h
		}
		host, err := url.PathUnescape(hp.Host)
		if err != nil {
			return fmt.Errorf("host %q: %v", hp.Host, err)
		}
		hp.Host = host
		if port != "" {
			if hp.Port, err = parsePort(port); err != nil {
				return err
			}
		}
		d.Hosts = append(d.Hosts, hp)
	}
	d.Host, d.Port = d.Hosts[0].Host, d.Hosts[0].Port
	return nil
}

func parsePort(p string) (int, error) {
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 || n > 65535 {
		return 0, fmt.Errorf("bad port %q", p)
	}
	return n, nil
}

// redactRaw hides the password of a DSN that could not be parsed, for an
// error message: a URL's userinfo after the first ':' (up to the last '@',
// which may hide more than the password but never less) and the value of a
// DBI password attribute.
func redactRaw(s string) string {
	if len(s) >= 4 && strings.EqualFold(s[:4], "dbi:") {
		attrs := strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ':' })
		out := s
		for _, a := range attrs {
			k, v, ok := strings.Cut(a, "=")
			if ok && v != "" && dbiKeys[strings.ToLower(strings.TrimSpace(k))] == "password" {
				out = strings.ReplaceAll(out, a, k+"=xxxxx")
			}
		}
		return strconv.Quote(out)
	}
	i := strings.Index(s, "://")
	if i < 0 {
		return strconv.Quote(s)
	}
	at := strings.LastIndexByte(s, '@')
	if at < i {
		return strconv.Quote(s)
	}
	ui := s[i+3 : at]
	if c := strings.IndexByte(ui, ':'); c >= 0 {
		return strconv.Quote(s[:i+3] + ui[:c] + ":xxxxx" + s[at:])
	}
	return strconv.Quote(s)
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
	if d.MaxIdleConns > 0 {
		q.Set("max_idle_conns", strconv.Itoa(d.MaxIdleConns))
	}
	if d.MaxOpenConns > 0 {
		q.Set("max_open_conns", strconv.Itoa(d.MaxOpenConns))
	}
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
	var b strings.Builder
	b.WriteString(d.Driver + "://")
	if d.User != "" {
		if d.Password != "" {
			b.WriteString(url.UserPassword(d.User, "xxxxx").String())
		} else {
			b.WriteString(url.User(d.User).String())
		}
		b.WriteString("@")
	}
	for i, h := range d.AllHosts() {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(h.String())
	}
	b.WriteString((&url.URL{Path: "/" + d.Database}).EscapedPath())
	if len(q) > 0 {
		b.WriteString("?" + q.Encode())
	}
	return b.String()
}

// String writes h as it appears in a URL's host list, which parses back
// to h: IPv6 in brackets, a socket path %-escaped.
func (h HostPort) String() string {
	s := h.Host
	switch {
	case strings.ContainsAny(s, "/%,@?#[]"):
		s = url.PathEscape(s)
		s = strings.NewReplacer(",", "%2C", "@", "%40", "[", "%5B", "]", "%5D").Replace(s)
		if strings.Contains(h.Host, ":") && !strings.Contains(h.Host, "/") {
			s = "[" + strings.ReplaceAll(s, "%3A", ":") + "]"
		}
	case strings.Contains(s, ":"):
		s = "[" + s + "]"
	}
	if h.Port != 0 {
		s += ":" + strconv.Itoa(h.Port)
	}
	return s
}
