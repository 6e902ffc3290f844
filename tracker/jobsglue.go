package tracker

import (
	"log/slog"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/jobs"
)

// NewJobs is the standard JobsFactory: package tracker/jobs's workers with
// replicate_jobs, delete_jobs and fsck_jobs workers. With job_master off
// (--no-job_master) the workers still run the queues but this tracker
// feeds no fsck or rebalance work into them, as in the original. The
// monitor watches I/O utilisation on mogstored_stream_port; port 0, which
// nothing can be reached on, watches nothing.
func NewJobs(st store.Store, cfg Config, log *slog.Logger) (Jobs, error) {
	o := jobs.DefaultOptions()
	o.ReplicateWorkers = cfg.ReplicateJobs
	o.DeleteWorkers = cfg.DeleteJobs
	o.FsckWorkers = cfg.FsckJobs
	o.NoJobMaster = !cfg.JobMaster
	o.Logger = log
	o.StreamPort = cfg.MogstoredStreamPort
	if o.StreamPort == 0 {
		o.StreamPort = -1
	}
	return jobsManager{jobs.New(st, o)}, nil
}

// jobsManager adds "!jobs" reporting to *jobs.Manager.
type jobsManager struct{ *jobs.Manager }

func (m jobsManager) JobStatus() []JobStatus {
	var out []JobStatus
	for _, s := range m.Stats() {
		out = append(out, JobStatus{Job: s.Name, Count: s.Running, Desired: s.Wanted})
	}
	return out
}
