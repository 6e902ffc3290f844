package sqlite

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/gomogile/gomogile/store"
)

// ParseDSN reads this backend's DSNs (see # DSN): the database is a file
// path, so unlike a URL's path it keeps its leading '/', and what follows
// "//" is all path (sqlite://C:/m.db on Windows, sqlite://rel/m.db), never
// a host. DBD::SQLite's bare DBI attribute is the whole path, ';' included.
func (driver) ParseDSN(raw string) (*store.DSN, error) {
	if name, attrs, ok := cutDBI(raw); ok {
		if name == "" || strings.Contains(attrs, "=") {
			d, err := store.ParseDBI(raw, store.DefaultDBISyntax)
			if err != nil {
				return nil, err
			}
			d.Path = d.Database
			return d, nil
		}
		return &store.DSN{Database: attrs, Path: attrs, Params: url.Values{}}, nil
	}
	_, rest, _ := strings.Cut(raw, ":")
	rest = strings.TrimPrefix(rest, "//")
	p, query, _ := strings.Cut(rest, "?")
	path, err := url.PathUnescape(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", store.ErrBadDSN, store.RedactDSN(raw), err)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", store.ErrBadDSN, store.RedactDSN(raw), err)
	}
	return &store.DSN{Database: path, Path: path, Params: q}, nil
}

// cutDBI splits DBI:driver:attrs into driver and attrs.
func cutDBI(raw string) (name, attrs string, ok bool) {
	if len(raw) < 4 || !strings.EqualFold(raw[:4], "dbi:") {
		return "", "", false
	}
	name, attrs, _ = strings.Cut(raw[4:], ":")
	return name, attrs, true
}
