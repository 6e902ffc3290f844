package jobs

import "time"

// SetTempfileBudget sets how long one reaper pass reads expired tempfiles
// before it yields (half of PassTimeout otherwise); call it before Open.
func SetTempfileBudget(m *Manager, d time.Duration) { m.tempfileBudget = d }
