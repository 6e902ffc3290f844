package main

import "github.com/gomogile/gomogile/tracker"

// newJobs builds the background workers (nil until tracker/jobs is wired in).
var newJobs tracker.JobsFactory
