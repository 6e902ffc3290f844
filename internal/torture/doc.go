// Package torture is the torture program of design §5: "a program that,
// run long enough, reproduces the error". It runs several simulated
// trackers — Stores opened independently on one DSN, as separate tracker
// processes would open them — under a mixed load of named locks, files,
// placement and queue work, while it kills the database sessions behind them
// and crashes lock holders, and then checks the invariants the contract
// promises:
//
//   - A, mutual exclusion: no two holders of one lock name at once, where a
//     holding ends at its Release call or when its Lost channel closes
//     (design §4 promise 8: Lost fires before another holder can get the
//     lock). A backend whose package doc states a looser bound for Lost
//     (MySQL's watcher) has the measured gap reported as a finding and judged
//     against that bound instead.
//   - B, lock-guarded counters: read-modify-write counters under a lock end
//     equal to the increments acknowledged under an intact lock, plus at most
//     those whose lock was lost after the write (and writes whose outcome is
//     unknown). Increments erased by a write that outlived its lock are
//     counted and explained, never silently accepted.
//   - Files: no fid handed out twice, nor at or below one reserved before the
//     call; every acknowledged commit is a file or
//     queued for deletion; every fid is in exactly one of tempfile, file,
//     delete queue (or none, when its tempfile was dropped); no two files
//     share (dmid, key); devcount equals the number of file_on rows.
//   - C, queues: no replicate-queue row held by two workers while both
//     leases are valid, and every enqueued fid is eventually leased and the
//     queue drains once faults stop.
//
// # Faults
//
// Every KillEvery (--kill-every) the injector kills database sessions of
// the test database from a connection of its own: MySQL KILL of the sessions
// listed in information_schema.PROCESSLIST, PostgreSQL pg_terminate_backend
// of the client backends in pg_stat_activity — all of them or a random half.
// SQLite has no sessions; a kill closes a random tracker instead. Every
// CrashEvery (--crash-every) it closes a tracker that holds locks
// (Store.Close, without telling its workers, which then see ErrClosed) and
// opens a new one in its place. A dying process's sockets closing without a word is out of reach of
// the contract; killed sessions stand in for it. Restarting the server is
// left to whoever runs the program.
//
// Faults are expected to make operations fail (ErrUnknownOutcome, ErrClosed,
// ErrLockLost, connection errors); the Report counts them by kind. They must
// never break an invariant. A seed drives every random choice, so a run can
// be repeated, though the interleaving of goroutines and the database cannot.
//
// cmd/gomogile-torture runs it from the command line, as long as asked, on an
// empty database of its own; torture_test.go runs a bounded smoke on every
// backend (and checks that a broken Store is caught).
package torture
