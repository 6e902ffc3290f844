package conformance

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

const (
	// timingSlack is how late a lock wait may end after its timeout or
	// cancellation. MySQL and PostgreSQL waits cost round trips, so it is
	// generous: these cases test correctness, benchmarks test speed.
	timingSlack = 1500 * time.Millisecond
	// deadOwnerSlack is added to Capabilities.DeadOwnerBound when polling
	// for a dead owner's lock to come free or for Lost to fire.
	deadOwnerSlack = 2 * time.Second
	// pollEvery is the polling period of waitFor.
	pollEvery = 5 * time.Millisecond
)

// Run runs the conformance suite against the backend behind h. Every case is
// a subtest with a fixed name, run in sequence after h.Reset; none is skipped.
// At the end Run prints a one-line summary to standard output and logs it.
//
// Each case's teardown checks that every lock it took can be taken again
// and that no goroutine started by the backend's packages outlives the
// case's Stores, so Run must not run in parallel with other tests of the
// backend (they would share its database and its goroutines anyway).
func Run(t *testing.T, h Harness) {
	ctx := t.Context()
	if err := h.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	s, err := store.Open(ctx, h.DSN())
	if err != nil {
		t.Fatalf("store.Open(%s DSN): %v", h.Name(), err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Errorf("Info: %v", err)
	}
	e := &env{h: h, caps: s.Capabilities()}
	if _, err := e.faultsOf(s); err != nil {
		s.Close()
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	t.Logf("backend %s, server %q, capabilities %+v", h.Name(), info.ServerVersion, e.caps)

	tests := []struct {
		name string
		fn   func(*testing.T, *env)
	}{
		// Named locks (design §4).
		{"LockExclusion", testLockExclusion},
		{"LockTimeoutNotEarly", testLockTimeoutNotEarly},
		{"LockTryOnce", testLockTryOnce},
		{"LockContextCancel", testLockContextCancel},
		{"LockContextDeadline", testLockContextDeadline},
		{"LockNotReentrant", testLockNotReentrant},
		{"LockManyPerHolder", testLockManyPerHolder},
		{"LockNameMaxLength", testLockNameMaxLength},
		{"LockNameInvalid", testLockNameInvalid},
		{"LockNegativeTimeout", testLockNegativeTimeout},
		{"LockNameCaseSensitive", testLockNameCaseSensitive},
		{"LockNameByteCompare", testLockNameByteCompare},
		{"LockNameLongPrefix", testLockNameLongPrefix},
		{"LockReleaseIdempotent", testLockReleaseIdempotent},
		{"LockGuardedCounter", testLockGuardedCounter},
		{"LockMutualExclusion", testLockMutualExclusion},
		{"LockHandoff", testLockHandoff},
		{"LockCloseReleases", testLockCloseReleases},
		{"LockLostOnKilledSession", testLockLostOnKilledSession},
		{"LockReleaseAfterLoss", testLockReleaseAfterLoss},
		{"LockCrashOwner", testLockCrashOwner},
		{"LockLiveOwnerNotReaped", testLockLiveOwnerNotReaped},

		// Fencing tokens.
		{"FenceTokensIncrease", testFenceTokensIncrease},
		{"FenceStaleAfterKill", testFenceStaleAfterKill},
		{"FenceStaleAfterRelease", testFenceStaleAfterRelease},

		// The Store itself.
		{"Info", testInfo},
		{"Now", testNow},
		{"Ping", testPing},
		{"ClosedStore", testClosedStore},
		{"SharedState", testSharedState},
		{"Reopen", testReopen},
		{"SchemaNewerRefused", testSchemaNewerRefused},
		{"ServerUnreachable", testServerUnreachable},

		// Namespace.
		{"DomainCreate", testDomainCreate},
		{"DomainDuplicate", testDomainDuplicate},
		{"DomainDelete", testDomainDelete},
		{"DomainDeleteHasFiles", testDomainDeleteHasFiles},
		{"DomainDeleteHasClasses", testDomainDeleteHasClasses},
		{"DomainIDsConcurrent", testDomainIDsConcurrent},
		{"DomainDuplicateRace", testDomainDuplicateRace},
		{"ClassCreate", testClassCreate},
		{"ClassDefaultIsZero", testClassDefaultIsZero},
		{"ClassDuplicate", testClassDuplicate},
		{"ClassDomainNotFound", testClassDomainNotFound},
		{"ClassUpdate", testClassUpdate},
		{"ClassDelete", testClassDelete},
		{"ClassIDsConcurrent", testClassIDsConcurrent},
		{"HostCreate", testHostCreate},
		{"HostDuplicate", testHostDuplicate},
		{"HostUpdate", testHostUpdate},
		{"HostDelete", testHostDelete},
		{"HostIDsConcurrent", testHostIDsConcurrent},
		{"DeviceCreate", testDeviceCreate},
		{"DeviceDuplicate", testDeviceDuplicate},
		{"DeviceState", testDeviceState},
		{"DeviceWeight", testDeviceWeight},
		{"DeviceUsage", testDeviceUsage},
		{"DeviceDelete", testDeviceDelete},

		// Files.
		{"TempFileCreate", testTempFileCreate},
		{"TempFileExplicitFid", testTempFileExplicitFid},
		{"TempFileDelete", testTempFileDelete},
		{"TempFileExpired", testTempFileExpired},
		{"FidNeverReused", testFidNeverReused},
		{"FidsConcurrent", testFidsConcurrent},
		{"CommitFile", testCommitFile},
		{"FileByKeyOn", testFileByKeyOn},
		{"CommitFileNotFound", testCommitFileNotFound},
		{"CommitFileRace", testCommitFileRace},
		{"CommitFileRaceSameKey", testCommitFileRaceSameKey},
		{"CommitFileRetry", testCommitFileRetry},
		{"CommitFileRetryAfterReplace", testCommitFileRetryAfterReplace},
		{"CommitFileReplacesKey", testCommitFileReplacesKey},
		{"CommitFileReplaceRace", testCommitFileReplaceRace},
		{"FileNotFound", testFileNotFound},
		{"FilesRange", testFilesRange},
		{"MaxFid", testMaxFid},
		{"FileCounts", testFileCounts},
		{"ImportRows", testImportRows},
		{"FidCounter", testFidCounter},
		{"ListKeysByteOrder", testListKeysByteOrder},
		{"ListKeysPrefix", testListKeysPrefix},
		{"ListKeysPaging", testListKeysPaging},
		{"RenameFile", testRenameFile},
		{"RenameRace", testRenameRace},
		{"SetFileClass", testSetFileClass},
		{"DeleteFile", testDeleteFile},
		{"DeleteFileRace", testDeleteFileRace},

		// Placement.
		{"AddFileOn", testAddFileOn},
		{"RemoveFileOn", testRemoveFileOn},
		{"FileOnWithoutFile", testFileOnWithoutFile},
		{"DevCountConcurrent", testDevCountConcurrent},
		{"SyncDevCount", testSyncDevCount},
		{"FidsOnDevice", testFidsOnDevice},
		{"FileOnRowsPaging", testFileOnRowsPaging},

		// Queues.
		{"QueueLifecycleReplicate", testQueueLifecycleReplicate},
		{"QueueLifecycleDelete", testQueueLifecycleDelete},
		{"QueueLifecycleFsck", testQueueLifecycleFsck},
		{"QueueLifecycleRebalance", testQueueLifecycleRebalance},
		{"EnqueueIdempotent", testEnqueueIdempotent},
		{"EnqueueNever", testEnqueueNever},
		{"EnqueueInvalidQueue", testEnqueueInvalidQueue},
		{"LeaseDueOnly", testLeaseDueOnly},
		{"LeaseMax", testLeaseMax},
		{"LeaseOrder", testLeaseOrder},
		{"LeaseExpires", testLeaseExpires},
		{"LeaseConcurrent", testLeaseConcurrent},
		{"Expedite", testExpedite},
		{"QueueIsolation", testQueueIsolation},
		{"QueueLengthAndClear", testQueueLengthAndClear},
		{"QueueItemsPaging", testQueueItemsPaging},

		// Settings, checksums, fsck log.
		{"ServerSettings", testServerSettings},
		{"IncrServerSetting", testIncrServerSetting},
		{"IncrServerSettingConcurrent", testIncrServerSettingConcurrent},
		{"Checksums", testChecksums},
		{"ChecksumsPaging", testChecksumsPaging},
		{"FsckLog", testFsckLog},

		// Everything at once, against the model.
		{"Differential", testDifferential},
	}

	var passed, failed, skipped, filtered int
	for _, tc := range tests {
		ran, skip := false, false
		ok := t.Run(tc.name, func(t *testing.T) {
			ran = true
			defer func() { skip = t.Skipped() }()
			// Registered first, so it runs after every Store of the case
			// has been closed.
			e.checkGoroutines(t)
			if err := h.Reset(t.Context()); err != nil {
				t.Fatalf("Reset: %v", err)
			}
			tc.fn(t, e)
		})
		switch {
		case !ran:
			filtered++
		case !ok:
			failed++
		case skip:
			skipped++
		default:
			passed++
		}
	}

	server := info.ServerVersion
	if server == "" || strings.ContainsAny(server, " \t\n\"") {
		server = strconv.Quote(server)
	}
	// The test name tells apart runs of one backend in several modes
	// (TestConformance, TestConformancePooler, …).
	// locks= tells apart a backend's own locks from an outside lock
	// service (lock_dsn) over the same backend.
	locks := e.caps.LockService
	if locks == "" {
		locks = "database"
	}
	line := fmt.Sprintf("conformance: backend=%s server=%s locks=%s passed=%d failed=%d skipped=%d capabilities=%+v test=%s",
		h.Name(), server, locks, passed, failed, skipped, e.caps, t.Name())
	if filtered > 0 {
		line += fmt.Sprintf(" filtered=%d", filtered)
	}
	if o, ok := h.(Origin); ok {
		// Where the server came from (an env DSN, a container of which
		// image): what a CI user needs to see without -v.
		origin := o.Origin()
		if origin == "" || strings.ContainsAny(origin, " \t\n\"") {
			origin = strconv.Quote(origin)
		}
		line += " origin=" + origin
	}
	t.Log(line)
	fmt.Println(line)
	WriteSummary(line)
}

// env is what every case gets: the harness and what the suite learnt about
// the backend before the cases ran.
type env struct {
	h    Harness
	caps store.Capabilities

	mu      sync.Mutex
	crashed map[*store.Store]bool
}

// open returns a new, independent Store (a new tracker), closed when the
// test ends; a Close error fails the test unless the Store was crashed.
func (e *env) open(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), e.h.DSN())
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() {
		err := s.Close()
		e.mu.Lock()
		crashed := e.crashed[s]
		delete(e.crashed, s)
		e.mu.Unlock()
		if err != nil && !crashed {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// crash makes s a dead owner through the Harness.
func (e *env) crash(t *testing.T, s *store.Store) {
	t.Helper()
	e.mu.Lock()
	if e.crashed == nil {
		e.crashed = map[*store.Store]bool{}
	}
	e.crashed[s] = true
	e.mu.Unlock()
	if err := e.faults(t, s).CrashOwner(t.Context()); err != nil {
		t.Fatalf("CrashOwner: %v", err)
	}
}

// kill ends the database session holding l of s, through Faults.
func (e *env) kill(t *testing.T, s *store.Store, l store.Lock) {
	t.Helper()
	ok(t, e.faults(t, s).KillLockSession(t.Context(), l), "KillLockSession")
}

// FaultsOf finds the fault hooks of s: s itself, or the Backend it wraps
// (Unwrap() store.Backend: the Store of store.Open wraps its backend), so
// that no wrapper need forward them.
func FaultsOf(s store.Backend) (Faults, bool) { return store.Find[Faults](s) }

// faultsOf is the one place the suite finds a Store's Faults: the
// Harness's FaultOverride if it has one, else FaultsOf.
func (e *env) faultsOf(s store.Backend) (Faults, error) {
	if o, ok := e.h.(FaultOverride); ok {
		if st, ok := s.(*store.Store); ok {
			if f := o.FaultsFor(st); f != nil {
				return f, nil
			}
		}
	}
	if f, ok := FaultsOf(s); ok {
		return f, nil
	}
	return nil, fmt.Errorf("backend %s: Store %T implements neither conformance.Faults nor does the harness %T implement conformance.FaultOverride; the lock cases need both faults", e.h.Name(), s, e.h)
}

func (e *env) faults(t *testing.T, s *store.Store) Faults {
	t.Helper()
	f, err := e.faultsOf(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// deadBound is how long a dead owner's lock may stay taken, slack included.
func (e *env) deadBound() time.Duration {
	return e.caps.DeadOwnerBound + deadOwnerSlack
}

// expectFree checks, after every Store of the test has been closed, that a
// fresh Store can take each name: nothing the test did left a lock behind.
// Call it before opening the test's Stores, so that it runs after them.
func (e *env) expectFree(t *testing.T, names ...string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := store.Open(ctx, e.h.DSN())
		if err != nil {
			t.Errorf("teardown: store.Open: %v", err)
			return
		}
		defer s.Close()
		for _, n := range names {
			l, err := s.Lock(ctx, n, e.deadBound())
			if err != nil {
				t.Errorf("teardown: lock %q left held after every Store closed: %v", short(n), err)
				continue
			}
			if err := l.Release(ctx); err != nil {
				t.Errorf("teardown: Release(%q): %v", short(n), err)
			}
		}
	})
}

// checkGoroutines fails the test if any goroutine that was not running
// before the case began outlives the case's Stores (renewers, watchers,
// reapers, driver goroutines), whichever package started it: a backend in
// another module is checked like gomogile's own. The test's own goroutines
// (the testing package's and the suite's) are not the backend's.
func (e *env) checkGoroutines(t *testing.T) {
	before := map[string]bool{}
	for _, g := range goroutines() {
		before[g.id] = true
	}
	t.Cleanup(func() {
		var leaked []string
		waitFor(2*time.Second, func() bool {
			leaked = leaked[:0]
			for _, g := range goroutines() {
				if !before[g.id] && !g.suites {
					leaked = append(leaked, g.stack)
				}
			}
			return len(leaked) == 0
		})
		if len(leaked) > 0 {
			t.Errorf("teardown: %d goroutines started during the case still running after every Store closed; want 0:\n%s",
				len(leaked), strings.Join(leaked, "\n\n"))
		}
	})
}

type goroutine struct {
	id     string
	stack  string
	suites bool // runs the test itself: testing's or the suite's code
}

// goroutines lists every goroutine of the program but the runtime's.
func goroutines() []goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		head, rest, _ := strings.Cut(g, "\n")
		id, _, _ := strings.Cut(strings.TrimPrefix(head, "goroutine "), " ")
		top, _, _ := strings.Cut(rest, "\n")
		out = append(out, goroutine{
			id:    id,
			stack: g,
			suites: strings.Contains(g, "testing.tRunner") || strings.Contains(g, "testing.(*T).Run") ||
				strings.Contains(top, "gomogile/gomogile/conformance."),
		})
	}
	return out
}

// waitFor polls cond every few milliseconds until it holds or d has passed,
// and reports whether it held.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollEvery)
	}
}

// closed reports whether ch is closed, without blocking.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// ok fails the test at once if err is not nil.
func ok(t *testing.T, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: got error %v; want nil", fmt.Sprintf(what, args...), err)
	}
}

// isErr fails the test at once unless errors.Is(err, want).
func isErr(t *testing.T, err, want error, what string, args ...any) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v; want %v", fmt.Sprintf(what, args...), err, want)
	}
}

// short abbreviates long lock names in messages.
func short(s string) string {
	if len(s) <= 40 {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)", s[:20], len(s))
}

// lockName gives a test its own lock names.
func lockName(t *testing.T, suffix string) string {
	return "conformance:" + t.Name() + suffix
}

// Fixtures.

func mkDomain(t *testing.T, s *store.Store, name string) store.Domain {
	t.Helper()
	d, err := s.CreateDomain(t.Context(), name)
	ok(t, err, "CreateDomain(%q)", name)
	return d
}

// mkDevices creates a host and n alive devices on it, returning their ids.
func mkDevices(t *testing.T, s *store.Store, n int) []int {
	t.Helper()
	ctx := t.Context()
	h, err := s.CreateHost(ctx, store.Host{Name: "host-" + strconv.Itoa(n), Status: store.HostAlive, HTTPPort: 7500, IP: "10.0.0." + strconv.Itoa(n)})
	ok(t, err, "CreateHost")
	var ids []int
	for i := 1; i <= n; i++ {
		d, err := s.CreateDevice(ctx, store.Device{ID: i, HostID: h.ID, Status: store.DeviceAlive, Weight: 100})
		ok(t, err, "CreateDevice(%d)", i)
		ids = append(ids, d.ID)
	}
	return ids
}

// mkFile reserves a fid and commits it as key in dmid with copies on devs.
func mkFile(t *testing.T, s *store.Store, dmid int, key string, devs ...int) store.File {
	t.Helper()
	ctx := t.Context()
	fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: dmid, Key: key, DevIDs: devs})
	ok(t, err, "CreateTempFile(%q)", key)
	res, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: dmid, Key: key, Length: int64(len(key)), DevIDs: devs})
	ok(t, err, "CommitFile(%d, %q)", fid, key)
	return res.File
}

func sortedInts(v []int) []int {
	v = slices.Clone(v)
	slices.Sort(v)
	return v
}

// within reports whether a and b are at most d apart.
func within(a, b time.Time, d time.Duration) bool {
	diff := a.Sub(b)
	return diff <= d && diff >= -d
}

// dbNow reads the database clock.
func dbNow(t *testing.T, s *store.Store) time.Time {
	t.Helper()
	now, err := s.Now(t.Context())
	ok(t, err, "Now")
	return now
}

// parallel runs f(i) for i in [0, n) concurrently, all released at once,
// and returns their errors.
func parallel(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = f(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// noErrs fails the test with every error of a parallel run.
func noErrs(t *testing.T, errs []error, what string) {
	t.Helper()
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s (worker %d): %v", what, i, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}
