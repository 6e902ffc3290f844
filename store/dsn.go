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
// than a silently ignored setting ([DSN.ApplyParams] does that, and the
// rest of the reading, by one set of rules).
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
	Hosts []HostPort
	// Database is the database name: a URL's path without its leading
	// '/', a DBI database/db/dbname attribute. A backend with its own
	// [DSNParser] may set it otherwise (SQLite: the file path).
	Database string
	// Path is a URL's path as written, %-unescaped, leading '/' kept
	// (mybackend:///var/lib/x.db has Path "/var/lib/x.db"); "" for DBI
	// forms. [DSN.Redacted] writes Path when set, else "/"+Database.
	Path   string
	Params url.Values
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
	// Locks is the lock service the Store keeps its named locks in
	// (ParseLockDSN of the lock_dsn parameter, common to every backend and
	// taken out of Params, or of WithLockDSN); nil: the database's own
	// locks. A backend that honours it starts no lock mechanism of its own.
	Locks *DSN
	// Replicas are the read replicas the replica parameters name (one
	// URL-escaped DSN of the same backend each, common to every backend
	// and taken out of Params); ReplicaMaxLag is replica_max_lag, 0 when
	// not given (a Store then uses DefaultReplicaMaxLag). See "Read replicas" in
	// the package doc: a backend without Capabilities.ReadReplicas is refused
	// them.
	Replicas      []*DSN
	ReplicaMaxLag time.Duration
	// Existing asks for a database that already holds the MogileFS
	// schema (Open's option ExistingOnly): one that does not is refused
	// with ErrSchemaMismatch before anything is created in it, and an
	// embedded database's missing file is not made. A backend that does
	// not honour it creates the schema as usual.
	Existing bool
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

// dbiKeys maps DBI attribute names to DSN fields; others become Params.
var dbiKeys = map[string]string{
	"database": "db", "dbname": "db", "db": "db",
	"host": "host", "hostname": "host",
	"port":     "port",
	"user":     "user",
	"password": "password",
}

// DSNParser is an optional interface of a [Driver] whose DSNs do not follow
// the generic forms of [ParseURL] and [ParseDBI] (a file path with its
// leading '/', a driver-specific DBI attribute syntax). [ParseDSN] hands it
// the whole DSN, as written, when the DSN's scheme (or DBI driver name) is
// one the Driver was registered under; without it the generic parsers run.
//
// ParseDSN must not connect. Its errors must wrap [ErrBadDSN] and must not
// show the password ([RedactDSN] prints a DSN that could not be parsed). It
// need not set DSN.Driver or read op_timeout: the registry sets Driver to the
// name the Driver was registered under and takes op_timeout out of Params.
type DSNParser interface {
	ParseDSN(raw string) (*DSN, error)
}

// ParseDSN parses s into a DSN for the backend its scheme names: by the
// backend's own [DSNParser] when it has one, else by [ParseURL] for
// scheme://… and [ParseDBI] (with [DefaultDBISyntax]) for DBI:driver:….
// The scheme, or the DBI driver name, is compared case-insensitively and may
// be any name or alias given to [Register]; DSN.Driver is then the name the
// backend was registered under. A scheme no backend registered is parsed by
// the generic parsers, and [Open] refuses it. No error shows the password.
//
// gomogile's own backends accept
//
//	sqlite:///abs/path.db   sqlite:relative/path.db   DBI:SQLite:dbname=/path.db   DBI:SQLite:/path.db
//	mysql://user:pass@host:3306/db?param=value
//	DBI:mysql:database=db;host=h;port=3306      DBI:mysql:db
//	DBI:mysql:db:host=h     DBI:mysql:db:h:3306  (DBD::mysql: ':' or ';', positional db, host, port)
//	postgres://user:pass@host:5432/db?param=value (also postgresql://)
//	DBI:Pg:dbname=db;host=h;port=5432
//	postgres://u@a:5432,b:5432/db?target_session_attrs=read-write
//	DBI:Pg:dbname=db;host=a,b;port=5432,5432     (host lists, see DSN.Hosts)
//
// (their package docs say which Params each takes).
//
// The parameter op_timeout (a Go duration, or whole seconds; default
// [DefaultOpTimeout], 0 for none) is read here for every backend and moved
// to DSN.OpTimeout; max_idle_conns and max_open_conns (positive integers)
// to DSN.MaxIdleConns and DSN.MaxOpenConns; lock_dsn (a URL-escaped
// lock_dsn, see ParseLockDSN) to DSN.Locks; replica (a URL-escaped DSN,
// repeatable) and replica_max_lag to DSN.Replicas and DSN.ReplicaMaxLag.
func ParseDSN(s string) (*DSN, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%w: empty DSN", ErrBadDSN)
	}
	name, dbi := schemeOf(s)
	reg, known := lookup(name)
	var d *DSN
	var err error
	switch p, ok := reg.driver.(DSNParser); {
	case known && ok:
		d, err = p.ParseDSN(s)
		if err == nil && d == nil {
			err = fmt.Errorf("%w: %s: backend %s returned no DSN", ErrBadDSN, RedactDSN(s), reg.name)
		}
	case dbi:
		d, err = ParseDBI(s, DefaultDBISyntax)
	default:
		d, err = ParseURL(s)
	}
	if err != nil {
		return nil, err
	}
	if d.Params == nil {
		d.Params = url.Values{}
	}
	d.Driver = strings.ToLower(name)
	if known {
		d.Driver = reg.name
	}
	d.OpTimeout = DefaultOpTimeout
	if err := d.take(Param{Names: []string{"op_timeout"}, Set: SecondsParam(&d.OpTimeout, false)}); err != nil {
		return nil, err
	}
	if err := d.takeLockDSN(); err != nil {
		return nil, err
	}
	if err := d.takeReplicas(); err != nil {
		return nil, err
	}
	if err := d.take(Param{Names: []string{"max_idle_conns"}, Set: IntParam(&d.MaxIdleConns, 1)}); err != nil {
		return nil, err
	}
	if err := d.take(Param{Names: []string{"max_open_conns"}, Set: IntParam(&d.MaxOpenConns, 1)}); err != nil {
		return nil, err
	}
	if d.MaxOpenConns > 0 && d.MaxIdleConns > d.MaxOpenConns {
		return nil, fmt.Errorf("%w: max_idle_conns=%d above max_open_conns=%d", ErrBadDSN, d.MaxIdleConns, d.MaxOpenConns)
	}
	return d, nil
}

// schemeOf returns the backend name s starts with: a URL's scheme, or the
// driver of a DBI:driver:… form (dbi reports which).
func schemeOf(s string) (name string, dbi bool) {
	if len(s) >= 4 && strings.EqualFold(s[:4], "dbi:") {
		name, _, _ = strings.Cut(s[4:], ":")
		return name, true
	}
	name, _, _ = strings.Cut(s, ":")
	return name, false
}

// ParseSeconds reads a DSN's time value as Perl's drivers and Go programs
// write it: a Go duration ("1.5s") or a whole number of seconds ("7"). It
// refuses a negative one; whether 0 is allowed is the caller's to say.
func ParseSeconds(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	dur, err := time.ParseDuration(v)
	if err != nil {
		n, nerr := strconv.Atoi(v)
		if nerr != nil {
			return 0, fmt.Errorf("%q is neither a duration nor whole seconds", v)
		}
		dur = time.Duration(n) * time.Second
	}
	if dur < 0 {
		return 0, fmt.Errorf("%q is negative", v)
	}
	return dur, nil
}

// DBISyntax is how a Perl DBD driver splits the attributes of its DBI DSN.
type DBISyntax struct {
	// Separators are the characters between attributes (";" for most
	// drivers; DBD::mysql also takes ':').
	Separators string
	// Positional names the fields ("db", "host", "port") that attributes
	// without '=' fill, in order; a bare attribute beyond them is an error.
	Positional []string
}

// DefaultDBISyntax is DBD::Pg's and most drivers': ';' between attributes,
// one bare attribute for the database name.
var DefaultDBISyntax = DBISyntax{Separators: ";", Positional: []string{"db"}}

// ParseDBI reads a Perl DBI DSN, DBI:driver:attributes, splitting the
// attributes as syn says. database, db and dbname set Database; host and
// hostname Host (a comma-separated list sets Hosts); port Port (one for
// every host or one per host); user and password User and Password; every
// other attribute becomes a Param under its own name. Driver is the
// lower-cased driver name as written (ParseDSN replaces it with the
// registered name). The "dbi:" prefix is case-insensitive. No error shows
// the password.
func ParseDBI(s string, syn DBISyntax) (*DSN, error) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) < 3 || parts[1] == "" || !strings.EqualFold(parts[0], "dbi") {
		return nil, fmt.Errorf("%w: %s: want DBI:<driver>:<attributes>", ErrBadDSN, RedactDSN(s))
	}
	d := &DSN{Driver: strings.ToLower(parts[1]), Params: url.Values{}}
	var hosts, ports string
	positional := syn.Positional
	seps := syn.Separators
	if seps == "" {
		seps = ";"
	}
	for _, attr := range splitAttrs(parts[2], seps) {
		attr = strings.TrimSpace(attr)
		if attr == "" {
			continue
		}
		k, v, hasEq := strings.Cut(attr, "=")
		if !hasEq {
			if len(positional) == 0 {
				return nil, fmt.Errorf("%w: %s: attribute %q has no '='", ErrBadDSN, RedactDSN(s), attr)
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
		return nil, fmt.Errorf("%w: %s: %v", ErrBadDSN, RedactDSN(s), err)
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

// ParseURL reads scheme://[user[:password]@]host[:port][,host[:port]…]/path?query.
// A host is a name, an IP ([v6] in brackets) or a %-escaped socket path
// (%2Fvar%2Frun%2Fpostgresql, as libpq accepts); user, password and path
// are %-unescaped. Path is the path as written (leading '/' kept) and
// Database the path without that '/'. Driver is the lower-cased scheme
// (ParseDSN replaces it with the registered name). No error shows the
// password.
//
// It does not use net/url for the authority: that takes one host only and
// refuses %-escaped socket paths.
func ParseURL(s string) (*DSN, error) {
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok || scheme == "" || strings.ContainsAny(scheme, "/?@") {
		return nil, fmt.Errorf("%w: %s: want scheme://… or DBI:driver:…", ErrBadDSN, RedactDSN(s))
	}
	scheme = strings.ToLower(scheme)
	d := &DSN{Driver: scheme, Params: url.Values{}}
	if !strings.HasPrefix(rest, "//") {
		return nil, fmt.Errorf("%w: %s: want %s://…", ErrBadDSN, RedactDSN(s), scheme)
	}
	rest = rest[2:]
	if strings.Contains(rest, "#") {
		return nil, fmt.Errorf("%w: %s: '#' must be escaped as %%23", ErrBadDSN, RedactDSN(s))
	}
	auth, tail := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		auth, tail = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(auth, '@'); i >= 0 {
		user, pass, hasPass := strings.Cut(auth[:i], ":")
		var err error
		if d.User, err = url.PathUnescape(user); err != nil {
			return nil, fmt.Errorf("%w: %s: bad escape in the user name", ErrBadDSN, RedactDSN(s))
		}
		if hasPass {
			if d.Password, err = url.PathUnescape(pass); err != nil {
				return nil, fmt.Errorf("%w: %s: bad escape in the password", ErrBadDSN, RedactDSN(s))
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
	d.Path = path
	d.Database = strings.TrimPrefix(path, "/")
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

// RedactDSN quotes a DSN that could not be parsed, with its password hidden,
// for an error message: a URL's userinfo after the first ':' (up to the last '@',
// which may hide more than the password but never less) and the value of a
// DBI password attribute.
func RedactDSN(s string) string {
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
	hosts := d.AllHosts()
	path := d.Path
	if strings.TrimPrefix(path, "/") != strings.TrimPrefix(d.Database, "/") {
		path = "/" + strings.TrimPrefix(d.Database, "/") // Database was amended after parsing
	}
	if path == "/" {
		path = ""
	}
	if len(hosts) == 0 && path != "" && !strings.HasPrefix(path, "/") {
		// A relative path, as a file backend's scheme:rel/path.db.
		return d.Driver + ":" + (&url.URL{Path: path}).EscapedPath() + query(q)
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
	for i, h := range hosts {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(h.String())
	}
	b.WriteString((&url.URL{Path: path}).EscapedPath())
	b.WriteString(query(q))
	return b.String()
}

func query(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
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
