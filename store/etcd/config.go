package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Defaults.
const (
	DefaultTTL         = 5 * time.Second
	DefaultPrefix      = "/gomogile"
	DefaultDialTimeout = 5 * time.Second
	DefaultPort        = 2379
	minTTL             = 2 * time.Second
)

// Config is a parsed lock_dsn.
type Config struct {
	Endpoints   []string
	Prefix      string
	TTL         time.Duration
	DialTimeout time.Duration
	Username    string
	Password    string
	TLS         *tls.Config
}

// ParseConfig reads an etcd lock_dsn (see the package doc).
func ParseConfig(d *store.DSN) (Config, error) {
	c := Config{Prefix: DefaultPrefix, TTL: DefaultTTL, DialTimeout: DefaultDialTimeout, Username: d.User, Password: d.Password}
	hosts := d.Hosts
	if len(hosts) == 0 && d.Host != "" {
		hosts = []store.HostPort{{Host: d.Host, Port: d.Port}}
	}
	if len(hosts) == 0 {
		return Config{}, fmt.Errorf("%w: etcd lock_dsn names no endpoint", store.ErrBadDSN)
	}
	for _, h := range hosts {
		port := h.Port
		if port == 0 {
			port = DefaultPort
		}
		host := h.Host
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		c.Endpoints = append(c.Endpoints, host+":"+strconv.Itoa(port))
	}
	if p := strings.TrimRight(d.Path, "/"); p != "" {
		c.Prefix = p
	}
	var caFile, certFile, keyFile string
	var tlsOn bool
	file := func(dst *string) func(string) error {
		return func(v string) error { *dst = v; return nil }
	}
	err := d.ApplyParams("etcd lock_dsn",
		store.Param{Names: []string{"ttl"}, Set: func(v string) (err error) {
			c.TTL, err = store.ParseSeconds(v)
			if err == nil && (c.TTL < minTTL || c.TTL%time.Second != 0) {
				err = fmt.Errorf("want whole seconds, at least %v (etcd leases count seconds)", minTTL)
			}
			return err
		}},
		store.Param{Names: []string{"dial_timeout"}, Set: store.SecondsParam(&c.DialTimeout, true)},
		store.Param{Names: []string{"cacert"}, Set: file(&caFile)},
		store.Param{Names: []string{"cert"}, Set: file(&certFile)},
		store.Param{Names: []string{"key"}, Set: file(&keyFile)},
		store.Param{Names: []string{"tls"}, Set: store.BoolParam(&tlsOn)},
	)
	if err != nil {
		return Config{}, err
	}
	useTLS := tlsOn || caFile != "" || certFile != "" || keyFile != ""
	if (certFile == "") != (keyFile == "") {
		return Config{}, fmt.Errorf("%w: etcd cert and key go together", store.ErrBadDSN)
	}
	if useTLS {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if caFile != "" {
			pem, err := os.ReadFile(caFile)
			if err != nil {
				return Config{}, fmt.Errorf("%w: etcd cacert: %v", store.ErrBadDSN, err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return Config{}, fmt.Errorf("%w: etcd cacert %s holds no PEM certificate", store.ErrBadDSN, caFile)
			}
			tc.RootCAs = pool
		}
		if certFile != "" {
			cert, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return Config{}, fmt.Errorf("%w: etcd cert/key: %v", store.ErrBadDSN, err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		c.TLS = tc
	}
	return c, nil
}

// OpenLockService connects to the cluster, checks that it answers, and
// takes the Store's lease.
func (Driver) OpenLockService(ctx context.Context, d *store.DSN) (store.LockService, error) {
	cfg, err := ParseConfig(d)
	if err != nil {
		return nil, err
	}
	return Open(ctx, cfg)
}
