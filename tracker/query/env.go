package query

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/tracker/internal/cluster"
	"github.com/gomogile/gomogile/tracker/jobs"
)

// Env is everything the query commands read and change: the commands are
// its methods, and nothing else reaches them. The server builds one Env
// and runs every request's command against it; a test can build one on a
// store and run commands without a server.
//
// Store, NS, Nodes, Log and Uploads are required. An Env is used through
// a pointer, and its fields are not changed once commands run.
type Env struct {
	// Store is the metadata database.
	Store *store.Store
	// NS is the namespace (domains, classes, hosts, devices) cache, shared
	// with the workers so that a command's change reaches both at once.
	NS *cluster.Cache
	// Nodes talks to storage nodes (MKCOL, HEAD, GET).
	Nodes *cluster.Nodes
	// Log is where commands log (the tracker's logger, which "!watch"
	// streams).
	Log *slog.Logger
	// Config is the configuration the commands read.
	Config Config
	// Jobs are the background workers; nil runs none, and the monitor's
	// view of devices is then empty (devices are judged by their database
	// state alone). The workers count only once JobsStarted is called.
	Jobs *jobs.Manager
	// Host is this tracker's hostname, written to fsck_host and rebal_host.
	Host string
	// Uploads are this tracker's open-upload slots (NewUploads).
	Uploads *Uploads

	temps    openedTemps  // tempfile rows create_open wrote (opened.go)
	cached   settingCache // settingCachedBool (settings.go)
	jobsOpen atomic.Bool  // Jobs has been opened (JobsStarted)
}

// Config are the configuration values the query commands read, filled by
// the server from its configuration file's keys.
type Config struct {
	// Cluster are the values the cluster model decides by
	// (min_free_space, default_mindevcount); the workers get the same.
	Cluster cluster.Settings
	// RequestTimeout is request_timeout: the time a request gets anew
	// after create_close has read the blob back for its checksum.
	RequestTimeout time.Duration
	// SleepMax is sleep_max: the longest sleep; 0 = no bound.
	SleepMax time.Duration
	// MaxOpenUploadsPerIP, MaxOpenUploads and TempFileTTL bound the open
	// uploads (max_open_uploads_per_ip, max_open_uploads; 0 = no bound;
	// tempfile_ttl: see uploads.go).
	MaxOpenUploadsPerIP int
	MaxOpenUploads      int
	TempFileTTL         time.Duration
}

// JobsStarted records that e.Jobs has been opened: from now on the
// commands ask its monitor about devices and wait for its rounds.
func (e *Env) JobsStarted() { e.jobsOpen.Store(true) }

// JobsRunning reports whether e has workers and they have been opened.
func (e *Env) JobsRunning() bool { return e.Jobs != nil && e.jobsOpen.Load() }

// Observe is the monitor's view of devid; without running workers there
// is no monitor and the database state alone decides.
func (e *Env) Observe(devid int) cluster.Observation {
	if !e.JobsRunning() {
		return cluster.Observation{}
	}
	return e.Jobs.Observe(devid)
}
