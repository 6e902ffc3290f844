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
}
