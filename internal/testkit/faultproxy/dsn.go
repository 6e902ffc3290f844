package faultproxy

import (
	"fmt"
	"net/url"
	"strings"
)

// Through starts a proxy in front of the server a URL-form DSN of
// package store names (postgres://… or mysql://…, one host) and returns it
// with the DSN that connects through it; the protocol follows the scheme.
// A PostgreSQL client's TLS request is refused (DenyTLS), so the proxy
// sees, and counts, every message.
func Through(dsn string, o Options) (*Proxy, string, error) {
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" || strings.Contains(u.Host, ",") {
		return nil, "", fmt.Errorf("faultproxy: %q is not a one-host URL DSN", dsn)
	}
	switch strings.ToLower(u.Scheme) {
	case "postgres", "postgresql":
		o.Protocol, o.DenyTLS = Postgres, true
	case "mysql":
		o.Protocol = MySQL
	default:
		return nil, "", fmt.Errorf("faultproxy: no protocol for scheme %q", u.Scheme)
	}
	p, err := Start(u.Host, o)
	if err != nil {
		return nil, "", err
	}
	u.Host = p.Addr()
	return p, u.String(), nil
}
