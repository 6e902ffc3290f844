// Package cluster is the one model of a MogileFS cluster that the tracker's
// query commands (package tracker) and its background workers (package
// tracker/jobs) both decide by: the namespace snapshot and its cache,
// device and host predicates, placement (where an upload's copies go,
// UploadDests, and where a file's further copies go, ReplPolicy.ReplicateTo,
// which replication, fsck, trimming and rebalance all ask), blob paths,
// weighted ordering, the rebalance policy and state, and the HTTP client
// that speaks to storage nodes.
//
// Nothing here reaches back into a tracker or a jobs manager. Settings
// (min_free_space, default_mindevcount, the node timeouts) come in as a
// [Settings] or [NodeConfig] value and the monitor's view of a device as an
// [Observation] value, so the same decision is made the same way on both
// sides; before this package each side kept its own copy and the copies had
// drifted (replication ignored min_free_space, for one).
package cluster
