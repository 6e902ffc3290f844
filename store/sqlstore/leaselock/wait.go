package leaselock

import (
	"time"
)

// nextBackoff is a waiter's poll interval after prev (0: its first),
// waited elapsed so far.
func (b *Locks) nextBackoff(prev, elapsed time.Duration) time.Duration {
	switch {
	case b.listening():
		return max(min(prev*2, maxBackoff), minBackoff)
	case elapsed < pollShortFor:
		return max(min(prev*2, pollShortMax), pollMin)
	default:
		return max(min(prev*2, maxBackoff), pollMin)
	}
}
