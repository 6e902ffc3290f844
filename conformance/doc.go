// Package conformance proves that a [store.Backend] keeps the metadata
// contract of package store: the same cases, under the same names, run on
// every backend, whether it lives in this repository (SQLite, MySQL/MariaDB,
// PostgreSQL) or in a backend author's own.
//
// The suite drives a backend only through what a tracker uses: [store.Open]
// on the DSN the [Harness] gives, once per simulated tracker, so that every
// exclusion, hand-off and reaping case involves independently opened Stores
// (two trackers), never two calls on one instance. Each case starts from a
// database the Harness has reset. Fault hooks ([Faults], which the
// backend's Store implements, or the Harness through [FaultOverride]) kill
// the session behind a lock or crash a lock owner, to prove that holder
// death frees the lock within [store.Capabilities.DeadOwnerBound] and that
// loss is reported. Each case's teardown fails if a goroutine started
// during the case outlives its Stores, whatever package started it.
//
// No case may be skipped and no core case depends on the backend's
// Capabilities; the suite logs them, uses DeadOwnerBound as the deadline of
// the dead-owner cases, and reads Embedded in one case, ServerUnreachable:
// for a backend with a server it puts a loopback TCP relay of its own at
// the one host:port of the Harness's DSN (through store.ParseDSN and
// store.OpenDSN), closes the relay's port under an open Store, then drops
// every connection it accepts, and expects every write of the contract to
// fail with store.ErrUnavailable, never store.ErrUnknownOutcome, and the
// Store to work again after, with nothing applied twice. An embedded
// backend has no port to close; the case checks that its DSN names no
// server. A differential case replays a seeded
// random sequence of operations on the backend and on an in-memory model of
// the contract and compares every result; its seed is logged and can be
// fixed with the environment variable named by [SeedEnv].
//
// When Run ends it prints one line to standard output, saying which
// backend and server version really ran and how many cases passed:
//
//	conformance: backend=sqlite server=3.46.0 locks=database passed=117 failed=0 skipped=0 capabilities={LockMechanism:in-process CrossProcess:false DeadOwnerBound:0s Embedded:true LockService:} test=TestConformance
//
// go test shows it without -v only for a package run from its own
// directory (`go test` with no package arguments); `go test ./...` keeps a
// passing package's output to itself. The file [SummaryEnv] names gets
// each line as well, e.g. GOMOGILE_TEST_SUMMARY=/dev/tty on a terminal.
//
// # Using the suite
//
// A backend's test file builds a Harness over one test database and calls
// [Run] from a test named TestConformance, and [RunBenchmarks] from a
// benchmark:
//
//	type harness struct{ dsn string; admin *sql.DB }
//
//	func (h *harness) Name() string { return "cockroach" }
//	func (h *harness) DSN() string  { return h.dsn }
//	func (h *harness) Reset(ctx context.Context) error {
//		tables := append(slices.Clone(sqlstore.Schema17Tables), sqlstore.OwnTables...)
//		_, err := h.admin.ExecContext(ctx, "TRUNCATE "+strings.Join(tables, ", ")) // and lock tables
//		return err
//	}
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, newHarness(t))
//	}
//
//	func BenchmarkConformance(b *testing.B) {
//		conformance.RunBenchmarks(b, newHarness(b))
//	}
//
// A Store built on sqlstore has the [Faults] when its lock backend
// implements sqlstore.LockFaults. examples/outside-backend in the
// repository is a complete backend in a module of its own.
//
// A backend whose test can restart its database server (a private instance,
// never a shared one) also implements [RestartHarness] and calls
// [RunRestart], whose cases check that fencing tokens keep rising across the
// restart and that a fence taken before it is refused after a new grant.
// Fencing cases in [Run] play a stale holder's writes through any open
// Store: a fence is only a name and a token carried by a context.
//
// The package imports store and testing only, never a backend; import it
// from _test.go files so that binaries do not link package testing.
package conformance
