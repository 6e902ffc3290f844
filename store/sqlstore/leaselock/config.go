package leaselock

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Defaults and limits of a Config.
const (
	DefaultLease = 10 * time.Second
	// MinLease keeps renewal (every lease/3) from turning into a busy
	// loop and leaves a round trip's worth of margin.
	MinLease = 300 * time.Millisecond
)

// Config is the lock part of a Store's settings.
type Config struct {
	// Name prefixes the backend's lock errors ("postgres").
	Name string
	// Lease is the sentinel lease, on the database clock; DefaultLease
	// when 0.
	Lease time.Duration
	// Reap is how often each Store reaps expired owners; Lease/2 when 0.
	Reap time.Duration
	// Identity is the owner identity: a new incarnation of it evicts older
	// ones at once, and a live one refuses a second. hostname:pid:n (n
	// counting this process's Stores) when empty.
	Identity string
	// NoListen makes waiters only poll even when the DB is a Notifier.
	NoListen bool
}

// Params are the lock_* DSN parameters, to hand to store.DSN.ApplyParams
// with the backend's own: lock_lease and lock_reap (Go durations),
// lock_owner (1 to 255 bytes), lock_notify (a boolean).
func (c *Config) Params() []store.Param {
	return []store.Param{
		{Names: []string{"lock_lease"}, Set: func(v string) (err error) {
			c.Lease, err = time.ParseDuration(v)
			if err == nil && c.Lease < MinLease {
				err = fmt.Errorf("below the minimum %v", MinLease)
			}
			return err
		}},
		{Names: []string{"lock_reap"}, Set: func(v string) (err error) {
			c.Reap, err = time.ParseDuration(v)
			if err == nil && c.Reap <= 0 {
				err = errors.New("must be positive")
			}
			return err
		}},
		{Names: []string{"lock_owner"}, Set: func(v string) error {
			if c.Identity = v; v == "" || len(v) > 255 {
				return errors.New("must be 1 to 255 bytes")
			}
			return nil
		}},
		{Names: []string{"lock_notify"}, Set: func(v string) error {
			on := true
			err := store.BoolParam(&on)(v)
			c.NoListen = !on
			return err
		}},
	}
}

// identitySeq numbers the Stores of this process, so that two Stores opened
// by one process without lock_owner are two owners, not one evicting the other.
var identitySeq atomic.Int64

// WithDefaults fills the zero fields as their docs say; New calls it, and a
// backend that reports the settings (capabilities) calls it first.
func (c Config) WithDefaults() Config {
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.Reap == 0 {
		c.Reap = c.Lease / 2
	}
	if c.Identity == "" {
		host, _ := os.Hostname()
		c.Identity = fmt.Sprintf("%s:%d:%d", host, os.Getpid(), identitySeq.Add(1))
	}
	if c.Name == "" {
		c.Name = "leaselock"
	}
	return c
}

// renewEvery leaves two renewal attempts before the local deadline.
func (c Config) renewEvery() time.Duration { return c.Lease / 3 }

// margin is how long before the lease can expire on the server a Store
// gives its locks up: it absorbs clock-rate differences and the round trip
// of the renewal that failed to come back.
func (c Config) margin() time.Duration { return c.Lease / 5 }

// DeadOwnerBound is how long a dead owner's locks can stay taken (the
// store.Capabilities value): its lease runs out at most Lease after its
// last renewal, and the next reaper pass (at most Reap later) frees them; a
// waiter reaps at once on its next try. Call it on WithDefaults' result.
func (c Config) DeadOwnerBound() time.Duration { return c.Lease + c.Reap }
