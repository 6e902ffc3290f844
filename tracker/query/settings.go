package query

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gomogile/gomogile/store"
)

// settingTTL bounds how stale settingCached may be: the original's
// server_setting_cached reads a copy its monitor refreshes every few
// seconds.
const settingTTL = 5 * time.Second

// settingCache holds the values settingCached read, by key.
type settingCache struct {
	mu sync.Mutex
	m  map[string]cachedSetting
}

type cachedSetting struct {
	val string
	set bool
	at  time.Time
}

// settingCachedBool is a boolean setting (Perl truth, false when unset)
// read on a hot path (create_open's skip_mkcol), as the original's
// server_setting_cached:
// the database is asked at most once per settingTTL per key, and a
// set_server_setting through this tracker is seen at once.
func (e *Env) settingCachedBool(ctx context.Context, key string) (bool, error) {
	v, _, err := e.settingCached(ctx, key)
	return PerlTrue(v), err
}

// settingCached is a setting's value and whether it is set at all, read
// as settingCachedBool reads it.
func (e *Env) settingCached(ctx context.Context, key string) (string, bool, error) {
	c := &e.cached
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok && time.Since(v.at) < settingTTL {
		return v.val, v.set, nil
	}
	val, err := e.Store.ServerSetting(ctx, key)
	set := err == nil
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read setting %s: %w", key, err)
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedSetting{}
	}
	c.m[key] = cachedSetting{val: val, set: set, at: time.Now()}
	c.mu.Unlock()
	return val, set, nil
}

// listKeysFolds reports whether list_keys matches prefixes
// case-insensitively: case_sensitive_list_keys set, and off (listkeys.go).
func (e *Env) listKeysFolds(ctx context.Context) (bool, error) {
	v, set, err := e.settingCached(ctx, "case_sensitive_list_keys")
	return set && !PerlTrue(v), err
}

func (e *Env) setting(ctx context.Context, key string) (string, error) {
	v, err := e.Store.ServerSetting(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read setting %s: %w", key, err)
	}
	return v, nil
}

// setOrDelete is set_server_setting with Perl's undef meaning delete.
func (e *Env) setOrDelete(ctx context.Context, key string, val *string) error {
	e.cached.mu.Lock()
	delete(e.cached.m, key)
	e.cached.mu.Unlock()
	if val == nil {
		return e.Store.DeleteServerSetting(ctx, key)
	}
	return e.Store.SetServerSetting(ctx, key, *val)
}

func sp(s string) *string { return &s }

// settingCleaner is Config::server_setting_is_writable: it returns the
// canonical value (nil = delete the setting) or an error for a bad format;
// ok is false for keys clients may not write.
func settingCleaner(key string) (clean func(string) (*string, error), ok bool) {
	any := func(v string) (*string, error) { return &v, nil }
	delIfBlank := func(v string) (*string, error) {
		if !PerlTrue(v) {
			return nil, nil
		}
		return &v, nil
	}
	boolean := func(v string) (*string, error) {
		if !PerlTrue(v) {
			return sp("0"), nil
		}
		switch strings.ToLower(v[:1]) {
		case "0", "f", "n":
			return sp("0"), nil
		case "1", "t", "y":
			return sp("1"), nil
		}
		lv := strings.ToLower(v)
		if strings.HasPrefix(lv, "off") {
			return sp("0"), nil
		}
		if strings.HasPrefix(lv, "on") {
			return sp("1"), nil
		}
		return nil, errors.New("Unknown format")
	}
	num := func(v string) (*string, error) {
		if !PerlTrue(v) {
			return sp("0"), nil
		}
		if allDigits(v) {
			return &v, nil
		}
		return nil, errors.New("Must be numeric")
	}
	netmasks := func(v string) (*string, error) {
		for _, n := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			if _, _, err := net.ParseCIDR(n); err != nil && net.ParseIP(n) == nil {
				return nil, errors.New("Doesn't match an acceptable netmask")
			}
		}
		return &v, nil
	}
	switch {
	case strings.HasPrefix(key, "slave_"):
		return delIfBlank, true
	case key == "skip_devcount", key == "skip_mkcol", key == "case_sensitive_list_keys":
		return boolean, true
	case key == "memcache_servers", key == "network_zones":
		return any, true
	case key == "memcache_ttl", key == "internal_queue_limit":
		return num, true
	case strings.HasPrefix(key, "zone_"):
		return netmasks, true
	case strings.HasPrefix(key, "queue_"):
		return any, true
	case key == "fsck_checksum":
		return func(v string) (*string, error) {
			switch {
			case v == "off":
				return sp("off"), nil
			case v == "class":
				return nil, nil
			}
			if h, ok := store.ParseHashType(v); ok && h != store.HashNone {
				return &v, nil
			}
			return nil, errors.New("Not a valid checksum algorithm")
		}, true
	}
	return nil, false
}

// settingRefusal says why gomogile refuses a server setting the original
// reads but gomogile cannot honour, given its cleaned value (nil: the
// setting is deleted, which is always allowed); "" means it is honoured.
// set_server_setting refuses rather than store a setting nothing obeys.
func settingRefusal(key string, v *string) string {
	if v == nil {
		return ""
	}
	set := *v != "" && *v != "0"
	switch {
	case key == "memcache_servers" && set:
		// memcache_ttl alone is accepted: without servers the original
		// ignores it as well.
		return "gomogile uses no memcache: get_paths always reads the database"
	case key == "internal_queue_limit" && set:
		return "gomogile's job master queues rows in the database and has no in-memory queue to limit; use queue_size_for_fsck or queue_size_for_rebal"
	case (key == "network_zones" || strings.HasPrefix(key, "zone_")) && set:
		return "only the MultipleNetworks policy and the ZoneLocal plugin read network zones, and gomogile runs neither; give hosts an altip/altmask instead"
	}
	return ""
}

func settingReadable(key string) bool {
	return key == "fsck_checksum" || !strings.HasPrefix(key, "fsck_")
}

func (e *Env) cmdSetServerSetting(ctx context.Context, r *Request) (*Reply, error) {
	key := r.Args.Get("key")
	if !PerlTrue(key) {
		return nil, perr("bad_params")
	}
	clean, ok := settingCleaner(key)
	if !ok {
		return nil, perr("not_writable")
	}
	v, err := clean(r.Args.Get("value"))
	if err != nil {
		return nil, perr("invalid_format", err.Error())
	}
	if why := settingRefusal(key, v); why != "" {
		return nil, perr("setting_refused", key+" refused: "+why)
	}
	if strings.HasPrefix(key, "slave_") && key != "slave_version" && v != nil && *v != "" && !e.Store.Capabilities().ReadReplicas {
		return nil, perr("setting_refused", key+" refused: db_dsn's backend has no read replicas (MySQL/MariaDB and PostgreSQL have)")
	}
	if err := e.setOrDelete(ctx, key, v); err != nil {
		return nil, err
	}
	if strings.HasPrefix(key, "slave_") {
		if _, err := e.Store.IncrServerSetting(ctx, "slave_version", 1); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func (e *Env) cmdServerSetting(ctx context.Context, r *Request) (*Reply, error) {
	key := r.Args.Get("key")
	if !PerlTrue(key) {
		return nil, perr("bad_params")
	}
	v, err := e.setting(ctx, key)
	if err != nil {
		return nil, err
	}
	res := &Reply{}
	res.Set("key", key)
	res.Set("value", v)
	return res, nil
}

func (e *Env) cmdServerSettings(ctx context.Context, r *Request) (*Reply, error) {
	all, err := e.Store.ServerSettings(ctx)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		if settingReadable(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	res := &Reply{}
	for i, k := range keys {
		res.Set("key_count", i+1)
		res.Set(fmt.Sprintf("key_%d", i+1), k)
		res.Set(fmt.Sprintf("value_%d", i+1), all[k])
	}
	return res, nil
}

func (e *Env) intSetting(ctx context.Context, key string) (int64, error) {
	v, err := e.setting(ctx, key)
	return PerlNum(v), err
}

func (e *Env) dbUnixTime(ctx context.Context) (string, error) {
	now, err := e.Store.Now(ctx)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(now.Unix(), 10), nil
}
