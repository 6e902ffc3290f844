// Package storerpc lets a tracker's job worker processes use the
// tracker's Store over one connection (a socketpair the tracker hands the
// worker at start).
//
// The workers run in processes of their own, as 2.73's did, so that an
// operator can kill or stop one by the pid "!jobs" lists without stopping
// the tracker. They cannot open the database themselves: SQLite's Store is
// one process per database file, with its named locks in that process's
// memory. So the tracker serves its own Store to them, and every backend
// takes the same path.
//
// The protocol is JSON, one frame per line, in both directions at once:
// "call" (a Store method, its arguments, the caller's deadline and the
// fences its context carries), "ret" (the results, or the error with the
// sentinels it matches, so errors.Is works across the connection), "cancel"
// (the caller's context ended), "lost" (a held lock's Lost closed), and
// "msg" (anything else the two ends tell each other; the caller's onMsg
// gets it). A lock is a handle the serving end keeps; when the connection
// ends, the serving end releases every lock the other end still holds, as
// a database releases a dead session's. The connection ends only when the
// worker process has exited or closed it, so a lock is never released
// under a live holder that believes it holds it.
//
// Sending never blocks: frames queue for a writer goroutine, so a stopped
// worker (kill -STOP) cannot stall the tracker that writes to it.
package storerpc
