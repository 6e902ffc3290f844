package tracker

import "github.com/gomogile/gomogile/tracker/internal/cluster"

// namespace is the cluster model's snapshot of domains, classes, hosts and
// devices, read through the cache the tracker shares with its workers
// (namespace_cache_ttl).
type namespace = cluster.Snapshot

// settings are the configuration values the cluster model decides by; the
// workers get the same value (NewJobs).
func (t *Tracker) settings() cluster.Settings { return t.cfg.clusterSettings() }

func (c Config) clusterSettings() cluster.Settings {
	return cluster.Settings{MinFreeMB: c.MinFreeSpace, DefaultMinDevCount: c.DefaultMinDevCount}
}

// nodeConfig configures the storage-node client, the tracker's and the
// workers' alike.
func (c Config) nodeConfig() cluster.NodeConfig {
	return cluster.NodeConfig{ConnTimeout: c.ConnTimeout, NodeTimeout: c.NodeTimeout, PoolSize: c.ConnPoolSize}
}
