package store

// LockStats are the numbers of a backend's own lock mechanism that no other
// mechanism has, for metrics. A Store reports them through the optional
// method LockStats() LockStats (package store/storemetrics asserts it; a
// Store without it reports none). Each field belongs to one mechanism of
// [Capabilities.LockMechanism] and stays zero under the others.
type LockStats struct {
	// Reaped counts the locks of expired owners this Store has freed since
	// it opened ("lease").
	Reaped int64
	// Pinned is how many database sessions are pinned to locks this Store
	// holds now ("session").
	Pinned int64
	// Woken counts this Store's lock waits that a notification or a
	// release by this Store ended, rather than a poll ("lease"): a count
	// that stays 0 while locks change hands means waiters are polling (no
	// listener, e.g. behind a transaction pooler).
	Woken int64
	// Owner is this Store's current owner incarnation in the database's
	// owner table, 0 between a loss and the next registration ("lease").
	// Each change means the Store lost its registration, and every lock
	// with it.
	Owner int64
}
