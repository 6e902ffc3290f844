package torture

import "time"

// KillPoolerAfter returns cfg set to SIGKILL the private PgBouncer
// (PrivatePgBouncer) once, d into the load, as its own assertion failures
// end it.
func KillPoolerAfter(cfg Config, d time.Duration) Config {
	cfg.killPoolerAfter = d
	return cfg
}
