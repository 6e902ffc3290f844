package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// DefaultReplicaMaxLag is how far behind its primary a read replica may be
// and still answer reads, when the DSN has no replica_max_lag.
const DefaultReplicaMaxLag = 2 * time.Second

type replicaKey struct{}

// AllowReplica returns ctx marked so that the Store reads that honour it
// may be answered by a read replica a bounded time behind the primary (see
// "Read replicas" in the package doc). 2.73's Store->slaves_ok.
func AllowReplica(ctx context.Context) context.Context {
	return context.WithValue(ctx, replicaKey{}, true)
}

// ReplicaAllowed reports whether ctx was marked by AllowReplica.
func ReplicaAllowed(ctx context.Context) bool {
	ok, _ := ctx.Value(replicaKey{}).(bool)
	return ok
}

// ReplicaStatus is what a Store knows of one of its read replicas
// (Info.Replicas).
type ReplicaStatus struct {
	Name string // the replica's DSN, redacted, or its slave_<key> name
	// Usable reports whether reads go there now: up, and its lag (by
	// position) within the bound when last measured.
	Usable bool
	// Lag is an upper bound of how far behind the primary the replica
	// was at its last measurement; 0 when never measured.
	Lag time.Duration
	// Reads counts reads the replica answered; Fallbacks reads asked of
	// it (or meant for it) that the primary answered instead.
	Reads, Fallbacks int64
	// Err is the last failure to reach or measure it, "" if none.
	Err string
}

// takeReplicas moves the replica and replica_max_lag parameters out of
// Params: each replica is a URL-escaped DSN of the same backend (its own
// parameters, user and password included; lock_dsn and replica refused).
func (d *DSN) takeReplicas() error {
	if vs, ok := d.Params["replica_max_lag"]; ok {
		delete(d.Params, "replica_max_lag")
		if len(vs) != 1 {
			return fmt.Errorf("%w: parameter replica_max_lag given %d times", ErrBadDSN, len(vs))
		}
		lag, err := ParseSeconds(vs[0])
		if err == nil && lag <= 0 {
			err = fmt.Errorf("%q is not positive", vs[0])
		}
		if err != nil {
			return fmt.Errorf("%w: replica_max_lag: %v", ErrBadDSN, err)
		}
		d.ReplicaMaxLag = lag
	}
	vs, ok := d.Params["replica"]
	if !ok {
		return nil
	}
	delete(d.Params, "replica")
	for _, v := range vs {
		r, err := ParseReplicaDSN(d.Driver, v)
		if err != nil {
			return err
		}
		d.Replicas = append(d.Replicas, r)
	}
	return nil
}

// ParseReplicaDSN parses the DSN of a read replica of a database of
// backend driver: a DSN in any form ParseDSN takes, of that backend, with
// no lock_dsn or replica of its own. 2.73's slave settings are
// "DSN|user|pass"; the caller splits those and sets User and Password.
func ParseReplicaDSN(driver, s string) (*DSN, error) {
	r, err := ParseDSN(s)
	if err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	if r.Driver != driver {
		return nil, fmt.Errorf("%w: replica %s is a %s DSN, the database a %s one", ErrBadDSN, r.Redacted(), r.Driver, driver)
	}
	if r.Locks != nil || len(r.Replicas) > 0 {
		return nil, fmt.Errorf("%w: replica %s names a lock_dsn or replicas of its own", ErrBadDSN, r.Redacted())
	}
	return r, nil
}

// SlaveDSN parses a 2.73 slave setting's value, "DSN|user|pass", for a
// database of backend driver.
func SlaveDSN(driver, v string) (*DSN, error) {
	parts := strings.Split(v, "|")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: slave setting %q does not split at '|' into DSN|user|pass", ErrBadDSN, RedactDSN(parts[0]))
	}
	r, err := ParseReplicaDSN(driver, parts[0])
	if err != nil {
		return nil, err
	}
	r.User, r.Password = parts[1], parts[2]
	return r, nil
}
