package tracker

import (
	"log/slog"
	"strconv"
	"strings"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/jobs"
	"github.com/gomogile/gomogile/tracker/query"
)

// NewJobs is the standard JobsFactory: package tracker/jobs's workers with
// replicate_jobs, delete_jobs and fsck_jobs workers, judging devices by
// the same min_free_space and default_mindevcount as the query commands,
// talking to storage nodes with the same conn_timeout, node_timeout and
// conn_pool_size, and reading the namespace with the same
// namespace_cache_ttl. With job_master off (--no-job_master) the workers
// still run the queues but this tracker feeds no fsck or rebalance work
// into them, as in the original. The monitor watches I/O utilisation on
// mogstored_stream_port; port 0, which nothing can be reached on, watches
// nothing (jobs.Options.StreamPort 0 means the same).
func NewJobs(st *store.Store, cfg Config, log *slog.Logger) (*jobs.Manager, error) {
	o := JobsOptions(cfg)
	o.Logger = log
	return jobs.New(st, o), nil
}

// JobsOptions maps every config key the workers read onto jobs.Options;
// the rest keep jobs.DefaultOptions.
func JobsOptions(cfg Config) jobs.Options {
	o := jobs.DefaultOptions()
	o.ReplicateWorkers = cfg.ReplicateJobs
	o.DeleteWorkers = cfg.DeleteJobs
	o.FsckWorkers = cfg.FsckJobs
	o.NoJobMaster = !cfg.JobMaster
	o.NoReaper = cfg.ReaperJobs == 0
	o.Settings = cfg.clusterSettings()
	o.Nodes = cfg.nodeConfig()
	o.ReplUseGetPort = cfg.ReplUseGetPort
	o.RebalanceIgnoreMissing = cfg.RebalanceIgnoreMissing
	o.NamespaceTTL = cfg.NamespaceCacheTTL
	o.TempFileTTL = cfg.TempFileTTL
	o.StreamPort = cfg.MogstoredStreamPort
	o.Testing, o.FakeIOUtil = cfg.Testing, cfg.FakeIOUtil
	return o
}

// testingEnv reads the original's test-rig variables from env (Main's
// Environ): TESTING (any value Perl calls true) and, with it,
// T_FAKE_IO_DEV<N>=<pct>.
func testingEnv(env []string) (testing bool, fake map[int]string) {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "TESTING" {
			testing = query.PerlTrue(v)
		}
		if n, ok := strings.CutPrefix(k, "T_FAKE_IO_DEV"); ok {
			if id, err := strconv.Atoi(n); err == nil && id > 0 {
				if fake == nil {
					fake = map[int]string{}
				}
				fake[id] = v
			}
		}
	}
	if !testing {
		fake = nil
	}
	return testing, fake
}

// jobStatus is "!jobs"' lines of the workers m runs.
func jobStatus(m *jobs.Manager) []JobStatus {
	var out []JobStatus
	for _, s := range m.Stats() {
		out = append(out, JobStatus{Job: s.Name, Count: s.Running, Desired: s.Wanted, Started: s.Started, Processes: s.Processes, Pids: s.Pids})
	}
	return out
}
