package main

import "github.com/gomogile/gomogile/tracker"

// newJobs builds the background workers: replicate, delete, fsck, reaper,
// monitor and (unless --no-job_master) the job master.
var newJobs tracker.JobsFactory = tracker.NewJobs
