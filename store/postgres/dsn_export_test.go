package postgres

import (
	"fmt"

	"github.com/gomogile/gomogile/store"
)

// ConnTargets returns the host:port list every connection of a Store opened
// with d tries, in order, and whether it insists on a server accepting
// writes (target_session_attrs=read-write).
func ConnTargets(d *store.DSN) (targets []string, readWrite bool, err error) {
	c, err := parseDSN(d)
	if err != nil {
		return nil, false, err
	}
	targets = append(targets, fmt.Sprintf("%s:%d", c.conn.Host, c.conn.Port))
	for _, f := range c.conn.Fallbacks {
		targets = append(targets, fmt.Sprintf("%s:%d", f.Host, f.Port))
	}
	return targets, c.conn.ValidateConnect != nil, nil
}

// ConnPassword is the password the connections of a Store opened with d send.
func ConnPassword(d *store.DSN) (string, error) {
	c, err := parseDSN(d)
	if err != nil {
		return "", err
	}
	return c.conn.Password, nil
}
