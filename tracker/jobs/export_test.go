package jobs

import "time"

// SetTempfileBudget sets how long one reaper pass reads expired tempfiles
// before it yields (half of PassTimeout otherwise); call it before Open.
func SetTempfileBudget(m *Manager, d time.Duration) { m.tempfileBudget = d }

// SetDownReminder sets how often the monitor repeats that a device still
// fails its check (a minute otherwise); call it before Open.
func SetDownReminder(m *Manager, d time.Duration) { m.downLog.every = d }
