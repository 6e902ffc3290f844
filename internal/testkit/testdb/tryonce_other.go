//go:build !unix

package testdb

import (
	"testing"
	"time"
)

const tryOnceEnv = "GOMOGILE_TEST_TRYONCE_DSN"

// TryOnceAfterPause needs SIGSTOP: skipped where there is none.
func TryOnceAfterPause(t *testing.T, dsn string, pause time.Duration) {
	t.Skip("no SIGSTOP on this system")
}

func tryOnceChild(string) int { return 1 }
