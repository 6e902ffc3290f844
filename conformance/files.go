package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

func testTempFileCreate(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d := mkDomain(t, s, "dom")
	want := store.TempFile{DomainID: d.ID, Key: "photos/é 1%_", ClassID: 0, DevIDs: []int{3, 1, 2}}
	before := dbNow(t, s)
	fid, err := s.CreateTempFile(ctx, want)
	ok(t, err, "CreateTempFile")
	// An empty database starts at fid 1, as MogileFS's auto-increment does.
	if fid != 1 {
		t.Fatalf("first CreateTempFile() on an empty database = %d; want 1", fid)
	}
	got, err := s.TempFile(ctx, fid)
	ok(t, err, "TempFile(%d)", fid)
	if got.Fid != fid || got.DomainID != want.DomainID || got.Key != want.Key || got.ClassID != want.ClassID ||
		!reflect.DeepEqual(sortedInts(got.DevIDs), sortedInts(want.DevIDs)) {
		t.Errorf("TempFile(%d) = %+v; want %+v with fid %d", fid, got, want, fid)
	}
	if !within(got.CreateTime, before, time.Minute) {
		t.Errorf("TempFile().CreateTime = %v; want the database clock, about %v", got.CreateTime, before)
	}
	fid2, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "other"})
	ok(t, err, "second CreateTempFile")
	if fid2 <= fid {
		t.Errorf("second CreateTempFile() = %d; want above %d", fid2, fid)
	}
	if _, err := s.File(ctx, fid); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("File(%d) of an uncommitted tempfile: got error %v; want %v", fid, err, store.ErrNotFound)
	}
}

func testTempFileExplicitFid(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	d := mkDomain(t, a, "dom")
	fid, err := a.CreateTempFile(ctx, store.TempFile{Fid: 5000, DomainID: d.ID, Key: "k"})
	ok(t, err, "CreateTempFile(fid 5000)")
	if fid != 5000 {
		t.Fatalf("CreateTempFile(fid 5000) = %d; want 5000", fid)
	}
	_, err = b.CreateTempFile(ctx, store.TempFile{Fid: 5000, DomainID: d.ID, Key: "k2"})
	isErr(t, err, store.ErrDuplicate, "CreateTempFile of a reserved fid")
	tf, err := a.TempFile(ctx, 5000)
	ok(t, err, "TempFile(5000)")
	if tf.Key != "k" {
		t.Errorf("TempFile(5000).Key = %q after a refused duplicate; want %q", tf.Key, "k")
	}
	next, err := b.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "auto"})
	ok(t, err, "CreateTempFile")
	if next <= 5000 {
		t.Errorf("CreateTempFile() after fid 5000 was reserved = %d; want above 5000", next)
	}

	_, err = a.CommitFile(ctx, store.Commit{Fid: 5000, DomainID: d.ID, Key: "k"})
	ok(t, err, "CommitFile(5000)")
	_, err = b.CreateTempFile(ctx, store.TempFile{Fid: 5000, DomainID: d.ID, Key: "k3"})
	isErr(t, err, store.ErrDuplicate, "CreateTempFile of a committed fid")
	if _, err := a.TempFile(ctx, 5000); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("TempFile(5000) after refused reservation of a committed fid: got error %v; want %v", err, store.ErrNotFound)
	}
}

func testTempFileDelete(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d := mkDomain(t, s, "dom")
	fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "k"})
	ok(t, err, "CreateTempFile")
	ok(t, s.DeleteTempFile(ctx, fid), "DeleteTempFile")
	_, err = s.TempFile(ctx, fid)
	isErr(t, err, store.ErrNotFound, "TempFile after DeleteTempFile")
	isErr(t, s.DeleteTempFile(ctx, fid), store.ErrNotFound, "second DeleteTempFile")
	_, err = s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: "k"})
	isErr(t, err, store.ErrNotFound, "CommitFile of a deleted tempfile")
	if _, err := s.FileByKey(ctx, d.ID, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FileByKey after refused commit: got error %v; want %v", err, store.ErrNotFound)
	}
}

func testTempFileExpired(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d := mkDomain(t, s, "dom")
	var fids []int64
	for i := range 3 {
		fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "k" + strconv.Itoa(i)})
		ok(t, err, "CreateTempFile")
		fids = append(fids, fid)
	}
	_, err := s.CommitFile(ctx, store.Commit{Fid: fids[2], DomainID: d.ID, Key: "k2"})
	ok(t, err, "CommitFile")
	old, err := s.ExpiredTempFiles(ctx, time.Hour, 10)
	ok(t, err, "ExpiredTempFiles(1h)")
	if len(old) != 0 {
		t.Errorf("ExpiredTempFiles(1h) = %+v; want none: they were made just now", old)
	}
	var got []store.TempFile
	if !waitFor(5*time.Second, func() bool {
		got, err = s.ExpiredTempFiles(ctx, 0, 10)
		return err == nil && len(got) >= 2
	}) {
		t.Fatalf("ExpiredTempFiles(0) = %+v, %v after 5s; want the 2 uncommitted tempfiles", got, err)
	}
	var gotFids []int64
	for i, tf := range got {
		gotFids = append(gotFids, tf.Fid)
		if i > 0 && tf.CreateTime.Before(got[i-1].CreateTime) {
			t.Errorf("ExpiredTempFiles not oldest first: %v before %v", got[i-1].CreateTime, tf.CreateTime)
		}
	}
	slices.Sort(gotFids)
	if !reflect.DeepEqual(gotFids, fids[:2]) {
		t.Errorf("ExpiredTempFiles(0) fids = %v; want %v (not the committed %d)", gotFids, fids[:2], fids[2])
	}
	one, err := s.ExpiredTempFiles(ctx, 0, 1)
	ok(t, err, "ExpiredTempFiles(0, limit 1)")
	if len(one) != 1 {
		t.Errorf("ExpiredTempFiles(limit 1) returned %d rows; want 1", len(one))
	}
}

func testFidNeverReused(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	d := mkDomain(t, a, "dom")
	var top int64
	for i := range 3 {
		f := mkFile(t, a, d.ID, "k"+strconv.Itoa(i))
		top = max(top, f.Fid)
	}
	tmp, err := a.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "uncommitted"})
	ok(t, err, "CreateTempFile")
	top = max(top, tmp)
	// Remove every trace of them.
	for fid := int64(1); fid <= top; fid++ {
		err := a.DeleteFile(ctx, fid)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("DeleteFile(%d): %v", fid, err)
		}
	}
	ok(t, a.DeleteTempFile(ctx, tmp), "DeleteTempFile")
	ok(t, a.ClearQueue(ctx, store.QueueDelete), "ClearQueue(delete)")
	if n, err := a.MaxFid(ctx); err != nil || n != 0 {
		t.Fatalf("MaxFid() with no files = %d, %v; want 0", n, err)
	}
	for _, s := range []*store.Store{a, b} {
		fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "again"})
		ok(t, err, "CreateTempFile after deleting everything")
		if fid <= top {
			t.Errorf("CreateTempFile() = %d after fids up to %d were used and deleted; want above %d", fid, top, top)
		}
		top = fid
	}
}

func testFidsConcurrent(t *testing.T, e *env) {
	s := e.open(t)
	d := mkDomain(t, s, "dom")
	ss := []*store.Store{s, e.open(t), e.open(t)}
	const workers, each = 6, 10
	fids := make([][]int64, workers)
	errs := parallel(workers, func(w int) error {
		for i := range each {
			fid, err := ss[w%len(ss)].CreateTempFile(t.Context(), store.TempFile{DomainID: d.ID, Key: fmt.Sprintf("w%d/%d", w, i)})
			if err != nil {
				return err
			}
			if n := len(fids[w]); n > 0 && fid <= fids[w][n-1] {
				return fmt.Errorf("fid %d after %d from the same worker; want increasing", fid, fids[w][n-1])
			}
			fids[w] = append(fids[w], fid)
		}
		return nil
	})
	noErrs(t, errs, "CreateTempFile")
	seen := map[int64]bool{}
	for _, ws := range fids {
		for _, fid := range ws {
			if seen[fid] {
				t.Errorf("fid %d handed out twice; want unique fids across Stores", fid)
			}
			seen[fid] = true
		}
	}
}

func fileOf(t *testing.T, s *store.Store, fid int64) store.File {
	t.Helper()
	f, err := s.File(t.Context(), fid)
	ok(t, err, "File(%d)", fid)
	return f
}

func fileOnOf(t *testing.T, s *store.Store, fid int64) []int {
	t.Helper()
	devs, err := s.FileOn(t.Context(), fid)
	ok(t, err, "FileOn(%d)", fid)
	return devs
}

func testCommitFile(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	devs := mkDevices(t, s, 3)
	d := mkDomain(t, s, "dom")
	c, err := s.CreateClass(ctx, store.Class{DomainID: d.ID, Name: "c", MinDevCount: 2})
	ok(t, err, "CreateClass")
	fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "k", ClassID: c.ID, DevIDs: devs})
	ok(t, err, "CreateTempFile")
	sum := []byte{0, 1, 2, 0xfe, 0xff, 0, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	res, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: "k", ClassID: c.ID, Length: 1 << 40,
		DevIDs: []int{devs[2], devs[0]}, Checksum: &store.Checksum{HashType: store.HashMD5, Sum: sum}, Replicate: true})
	ok(t, err, "CommitFile")
	want := store.File{Fid: fid, DomainID: d.ID, Key: "k", Length: 1 << 40, ClassID: c.ID, DevCount: 2}
	if res.File != want || res.ReplacedFid != 0 {
		t.Errorf("CommitFile() = %+v; want {File:%+v ReplacedFid:0}", res, want)
	}
	if got := fileOf(t, s, fid); got != want {
		t.Errorf("File(%d) = %+v; want %+v", fid, got, want)
	}
	got, err := s.FileByKey(ctx, d.ID, "k")
	ok(t, err, "FileByKey")
	if got != want {
		t.Errorf("FileByKey() = %+v; want %+v", got, want)
	}
	if on := fileOnOf(t, s, fid); !reflect.DeepEqual(on, []int{devs[0], devs[2]}) {
		t.Errorf("FileOn(%d) = %v; want %v", fid, on, []int{devs[0], devs[2]})
	}
	_, err = s.TempFile(ctx, fid)
	isErr(t, err, store.ErrNotFound, "TempFile after commit")
	cs, err := s.Checksum(ctx, fid)
	ok(t, err, "Checksum")
	if cs.Fid != fid || cs.HashType != store.HashMD5 || !bytes.Equal(cs.Sum, sum) {
		t.Errorf("Checksum(%d) = %+v; want {Fid:%d HashType:1 Sum:%x}", fid, cs, fid, sum)
	}
	q, err := s.QueueItem(ctx, store.QueueReplicate, fid)
	ok(t, err, "QueueItem(replicate) of a commit with Replicate")
	if q.Fid != fid || q.FailCount != 0 || q.NextTry.Equal(store.EndOfTime) {
		t.Errorf("replicate row = %+v; want fid %d, no failures, not parked", q, fid)
	}

	// Without Replicate and Checksum, nothing is queued or stored.
	f2 := mkFile(t, s, d.ID, "k2", devs[1])
	if _, err := s.QueueItem(ctx, store.QueueReplicate, f2.Fid); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("QueueItem(replicate) of a commit without Replicate: got error %v; want %v", err, store.ErrNotFound)
	}
	if _, err := s.Checksum(ctx, f2.Fid); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Checksum of a commit without one: got error %v; want %v", err, store.ErrNotFound)
	}
	if n, err := s.QueueLength(ctx, store.QueueDelete); err != nil || n != 0 {
		t.Errorf("QueueLength(delete) = %d, %v; want 0: nothing was replaced", n, err)
	}
}

func testCommitFileNotFound(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d := mkDomain(t, s, "dom")
	_, err := s.CommitFile(ctx, store.Commit{Fid: 777, DomainID: d.ID, Key: "k", DevIDs: []int{1}, Replicate: true,
		Checksum: &store.Checksum{HashType: store.HashMD5, Sum: make([]byte, 16)}})
	isErr(t, err, store.ErrNotFound, "CommitFile without a tempfile")
	_, err = s.File(ctx, 777)
	isErr(t, err, store.ErrNotFound, "File after refused commit")
	_, err = s.FileByKey(ctx, d.ID, "k")
	isErr(t, err, store.ErrNotFound, "FileByKey after refused commit")
	if on := fileOnOf(t, s, 777); len(on) != 0 {
		t.Errorf("FileOn after refused commit = %v; want none", on)
	}
	_, err = s.Checksum(ctx, 777)
	isErr(t, err, store.ErrNotFound, "Checksum after refused commit")
	if n, err := s.QueueLength(ctx, store.QueueReplicate); err != nil || n != 0 {
		t.Errorf("QueueLength(replicate) after refused commit = %d, %v; want 0", n, err)
	}
}

// raceCommits commits the same tempfile from two Stores at once, with the
// commits given, and returns both results.
func raceCommits(t *testing.T, ss [2]*store.Store, cs [2]store.Commit) ([2]store.CommitResult, [2]error) {
	var res [2]store.CommitResult
	var errs [2]error
	parallel(2, func(i int) error {
		res[i], errs[i] = ss[i].CommitFile(t.Context(), cs[i])
		return nil
	})
	return res, errs
}

func testCommitFileRace(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	devs := mkDevices(t, a, 4)
	d := mkDomain(t, a, "dom")
	for round := range 8 {
		fid, err := a.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "tmp"})
		ok(t, err, "CreateTempFile")
		// Two create_close for one fid naming different keys and devices:
		// neither is a retry of the other.
		cs := [2]store.Commit{
			{Fid: fid, DomainID: d.ID, Key: fmt.Sprintf("r%d/a", round), Length: 1, DevIDs: devs[:2], Replicate: true},
			{Fid: fid, DomainID: d.ID, Key: fmt.Sprintf("r%d/b", round), Length: 2, DevIDs: devs[2:], Replicate: true},
		}
		res, errs := raceCommits(t, [2]*store.Store{a, b}, cs)
		var win int
		switch {
		case errs[0] == nil && errors.Is(errs[1], store.ErrNotFound):
			win = 0
		case errs[1] == nil && errors.Is(errs[0], store.ErrNotFound):
			win = 1
		default:
			t.Fatalf("round %d: racing commits returned %v and %v; want exactly one nil and one %v", round, errs[0], errs[1], store.ErrNotFound)
		}
		lose := 1 - win
		want := store.File{Fid: fid, DomainID: d.ID, Key: cs[win].Key, Length: cs[win].Length, DevCount: 2}
		if res[win].File != want {
			t.Errorf("round %d: winner's result %+v; want %+v", round, res[win].File, want)
		}
		if got := fileOf(t, b, fid); got != want {
			t.Errorf("round %d: File(%d) = %+v; want the winner's %+v", round, fid, got, want)
		}
		if _, err := a.FileByKey(ctx, d.ID, cs[lose].Key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("round %d: the loser's key exists (error %v); want %v", round, err, store.ErrNotFound)
		}
		if on := fileOnOf(t, a, fid); !reflect.DeepEqual(on, sortedInts(cs[win].DevIDs)) {
			t.Errorf("round %d: FileOn(%d) = %v; want only the winner's %v", round, fid, on, cs[win].DevIDs)
		}
	}
	if n, err := a.QueueLength(ctx, store.QueueReplicate); err != nil || n != 8 {
		t.Errorf("QueueLength(replicate) = %d, %v; want 8, one per fid", n, err)
	}
}

func testCommitFileRaceSameKey(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	devs := mkDevices(t, a, 2)
	d := mkDomain(t, a, "dom")
	for round := range 8 {
		key := "same/" + strconv.Itoa(round)
		fid, err := a.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: key})
		ok(t, err, "CreateTempFile")
		c := store.Commit{Fid: fid, DomainID: d.ID, Key: key, Length: 9, DevIDs: devs, Replicate: true}
		// Identical commits: whichever comes second is a retry of an
		// applied commit, so both succeed with one result.
		res, errs := raceCommits(t, [2]*store.Store{a, b}, [2]store.Commit{c, c})
		for i, err := range errs {
			ok(t, err, "round %d: identical racing commit %d", round, i)
		}
		if res[0] != res[1] {
			t.Errorf("round %d: identical commits returned %+v and %+v; want the same result", round, res[0], res[1])
		}
		want := store.File{Fid: fid, DomainID: d.ID, Key: key, Length: 9, DevCount: 2}
		if got := fileOf(t, a, fid); got != want {
			t.Errorf("round %d: File(%d) = %+v; want %+v", round, fid, got, want)
		}
	}
	if n, err := a.QueueLength(ctx, store.QueueReplicate); err != nil || n != 8 {
		t.Errorf("QueueLength(replicate) = %d, %v; want 8, one per fid", n, err)
	}
	files, err := a.Files(ctx, 0, math.MaxInt64, 100)
	ok(t, err, "Files")
	if len(files) != 8 {
		t.Errorf("Files() has %d rows; want 8", len(files))
	}
}

func testCommitFileRetry(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	devs := mkDevices(t, a, 2)
	d := mkDomain(t, a, "dom")
	fid, err := a.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "k"})
	ok(t, err, "CreateTempFile")
	c := store.Commit{Fid: fid, DomainID: d.ID, Key: "k", Length: 3, DevIDs: devs, Replicate: true,
		Checksum: &store.Checksum{HashType: store.HashMD5, Sum: bytes.Repeat([]byte{9}, 16)}}
	first, err := a.CommitFile(ctx, c)
	ok(t, err, "CommitFile")
	// The tracker lost the acknowledgement and retries, maybe elsewhere.
	for i, s := range []*store.Store{a, b} {
		again, err := s.CommitFile(ctx, c)
		ok(t, err, "retry %d of an applied commit", i)
		if again != first {
			t.Errorf("retry %d returned %+v; want the first result %+v", i, again, first)
		}
	}
	if n, err := a.QueueLength(ctx, store.QueueReplicate); err != nil || n != 1 {
		t.Errorf("QueueLength(replicate) after retries = %d, %v; want 1", n, err)
	}
	if on := fileOnOf(t, a, fid); len(on) != 2 {
		t.Errorf("FileOn after retries = %v; want 2 devices", on)
	}
	if got := fileOf(t, a, fid); got != first.File {
		t.Errorf("File after retries = %+v; want %+v", got, first.File)
	}
	if n, err := a.MaxFid(ctx); err != nil || n != fid {
		t.Errorf("MaxFid() after retries = %d, %v; want %d", n, err, fid)
	}
	// A "retry" naming another key is not a retry: the tempfile is gone.
	_, err = b.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: "other", Length: 3})
	isErr(t, err, store.ErrNotFound, "CommitFile of a committed fid under another key")
	if _, err := a.FileByKey(ctx, d.ID, "other"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FileByKey(other) after refused commit: got error %v; want %v", err, store.ErrNotFound)
	}
}

func testCommitFileRetryAfterReplace(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	d := mkDomain(t, a, "dom")
	old := mkFile(t, a, d.ID, "k")
	fid, err := a.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "k"})
	ok(t, err, "CreateTempFile")
	c := store.Commit{Fid: fid, DomainID: d.ID, Key: "k", Length: 5}
	first, err := a.CommitFile(ctx, c)
	ok(t, err, "CommitFile replacing a key")
	if first.ReplacedFid != old.Fid {
		t.Fatalf("CommitFile().ReplacedFid = %d; want %d", first.ReplacedFid, old.Fid)
	}
	again, err := b.CommitFile(ctx, c)
	ok(t, err, "retry of an applied commit that replaced a key")
	if again != first {
		t.Errorf("retry returned %+v; want the first result %+v", again, first)
	}
	if n, err := a.QueueLength(ctx, store.QueueDelete); err != nil || n != 1 {
		t.Errorf("QueueLength(delete) after the retry = %d, %v; want 1", n, err)
	}
}

func testCommitFileReplacesKey(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	devs := mkDevices(t, a, 3)
	d := mkDomain(t, a, "dom")
	other := mkDomain(t, a, "other")
	old := mkFile(t, a, d.ID, "k", devs[0], devs[1])
	same := mkFile(t, a, other.ID, "k", devs[0])
	fid, err := b.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "k"})
	ok(t, err, "CreateTempFile")
	res, err := b.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: "k", Length: 4, DevIDs: devs[2:]})
	ok(t, err, "CommitFile over an existing key")
	if res.ReplacedFid != old.Fid {
		t.Errorf("CommitFile().ReplacedFid = %d; want %d", res.ReplacedFid, old.Fid)
	}
	got, err := a.FileByKey(ctx, d.ID, "k")
	ok(t, err, "FileByKey")
	if got.Fid != fid {
		t.Errorf("FileByKey(k).Fid = %d; want the new %d", got.Fid, fid)
	}
	_, err = a.File(ctx, old.Fid)
	isErr(t, err, store.ErrNotFound, "File of the replaced fid")
	q, err := a.QueueItem(ctx, store.QueueDelete, old.Fid)
	ok(t, err, "QueueItem(delete) of the replaced fid")
	if q.Fid != old.Fid || q.NextTry.Equal(store.EndOfTime) {
		t.Errorf("delete row of the replaced fid = %+v; want fid %d, not parked", q, old.Fid)
	}
	// Its copies stay for the delete worker; never orphaned, never lost.
	if on := fileOnOf(t, a, old.Fid); len(on) != 2 {
		t.Errorf("FileOn(%d) of the replaced fid = %v; want its 2 copies kept for the delete worker", old.Fid, on)
	}
	// The same key in another domain is untouched.
	if got := fileOf(t, a, same.Fid); got != same {
		t.Errorf("File in another domain = %+v; want %+v", got, same)
	}
	if n, err := a.QueueLength(ctx, store.QueueDelete); err != nil || n != 1 {
		t.Errorf("QueueLength(delete) = %d, %v; want 1", n, err)
	}
}

func testFileNotFound(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d := mkDomain(t, s, "dom")
	f := mkFile(t, s, d.ID, "k")
	_, err := s.File(ctx, f.Fid+1)
	isErr(t, err, store.ErrNotFound, "File of an unknown fid")
	_, err = s.FileByKey(ctx, d.ID, "K")
	isErr(t, err, store.ErrNotFound, "FileByKey(K) when only k exists")
	_, err = s.FileByKey(ctx, d.ID, "k ")
	isErr(t, err, store.ErrNotFound, "FileByKey(\"k \") when only k exists")
	_, err = s.FileByKey(ctx, d.ID+1, "k")
	isErr(t, err, store.ErrNotFound, "FileByKey in another domain")
	_, err = s.SyncDevCount(ctx, f.Fid+1)
	isErr(t, err, store.ErrNotFound, "SyncDevCount of an unknown fid")
}

func testFilesRange(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d := mkDomain(t, s, "dom")
	var fs []store.File
	for i := range 6 {
		fs = append(fs, mkFile(t, s, d.ID, "k"+strconv.Itoa(i)))
	}
	// A tempfile is not a file.
	_, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "tmp"})
	ok(t, err, "CreateTempFile")
	for _, tc := range []struct {
		from, to int64
		limit    int
		want     []store.File
	}{
		{0, math.MaxInt64, 100, fs},
		{fs[1].Fid, fs[3].Fid, 100, fs[1:4]},
		{fs[1].Fid, fs[4].Fid, 2, fs[1:3]},
		{fs[5].Fid + 1, math.MaxInt64, 100, nil},
		{fs[3].Fid, fs[3].Fid, 1, fs[3:4]},
	} {
		got, err := s.Files(ctx, tc.from, tc.to, tc.limit)
		ok(t, err, "Files(%d, %d, %d)", tc.from, tc.to, tc.limit)
		if len(got) != len(tc.want) || (len(got) > 0 && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("Files(%d, %d, %d) = %+v; want %+v", tc.from, tc.to, tc.limit, got, tc.want)
		}
	}
}

func testMaxFid(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	n, err := s.MaxFid(ctx)
	ok(t, err, "MaxFid")
	if n != 0 {
		t.Errorf("MaxFid() of an empty database = %d; want 0", n)
	}
	d := mkDomain(t, s, "dom")
	mkFile(t, s, d.ID, "a")
	f := mkFile(t, s, d.ID, "b")
	_, err = s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "tmp"})
	ok(t, err, "CreateTempFile")
	n, err = s.MaxFid(ctx)
	ok(t, err, "MaxFid")
	if n != f.Fid {
		t.Errorf("MaxFid() = %d; want %d, the largest committed fid (tempfiles do not count)", n, f.Fid)
	}
}

// listKeys is the key set of the ListKeys cases: byte order differs from
// any case- or accent-insensitive collation, and LIKE's metacharacters
// appear in keys and prefixes.
var listKeys = []string{
	"a", "a%", "a%b", "a_b", "ab", "a\\b", "a\\", "A", "B", "Z", "z", "é", "e", "f",
	"日本", "日本語", "\u00ff", "%", "%a", "_x", "\\", "a b", "ä", "a\u0301",
}

func listSetup(t *testing.T, s *store.Store) store.Domain {
	t.Helper()
	d := mkDomain(t, s, "dom")
	other := mkDomain(t, s, "other")
	for _, k := range listKeys {
		mkFile(t, s, d.ID, k)
	}
	mkFile(t, s, other.ID, "a")
	mkFile(t, s, other.ID, "a-other-domain")
	return d
}

// wantKeys is the reference answer: Go compares strings by bytes.
func wantKeys(prefix, after string, limit int) []string {
	var out []string
	for _, k := range listKeys {
		if strings.HasPrefix(k, prefix) && k > after {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

func checkList(t *testing.T, s *store.Store, dmid int, prefix, after string, limit int) {
	t.Helper()
	got, err := s.ListKeys(t.Context(), dmid, prefix, after, limit)
	ok(t, err, "ListKeys(%q, %q, %d)", prefix, after, limit)
	want := wantKeys(prefix, after, limit)
	if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
		t.Errorf("ListKeys(prefix %q, after %q, limit %d) = %q; want %q", prefix, after, limit, got, want)
	}
}

func testListKeysByteOrder(t *testing.T, e *env) {
	s := e.open(t)
	d := listSetup(t, s)
	checkList(t, s, d.ID, "", "", 1000)
	for _, after := range []string{"Z", "a", "z", "é", "\u00ff", "日本", "\\", "%"} {
		checkList(t, s, d.ID, "", after, 1000)
	}
}

func testListKeysPrefix(t *testing.T, e *env) {
	s := e.open(t)
	d := listSetup(t, s)
	for _, p := range []string{"a", "A", "%", "_", "\\", "a%", "a_", "a\\", "é", "日", "日本", "\u00ff", "e", "zz", "a "} {
		checkList(t, s, d.ID, p, "", 1000)
	}
	checkList(t, s, d.ID, "a", "a%", 1000)
	checkList(t, s, d.ID, "a", "a\\", 2)
}

func testListKeysPaging(t *testing.T, e *env) {
	s := e.open(t)
	d := listSetup(t, s)
	for _, prefix := range []string{"", "a"} {
		var all []string
		after := ""
		for page := 0; ; page++ {
			if page > len(listKeys) {
				t.Fatalf("paging with prefix %q does not end", prefix)
			}
			got, err := s.ListKeys(t.Context(), d.ID, prefix, after, 3)
			ok(t, err, "ListKeys")
			if len(got) > 3 {
				t.Fatalf("ListKeys(limit 3) returned %d keys", len(got))
			}
			if len(got) == 0 {
				break
			}
			all = append(all, got...)
			after = got[len(got)-1]
		}
		if want := wantKeys(prefix, "", 1000); !reflect.DeepEqual(all, want) {
			t.Errorf("pages of 3 with prefix %q gave %q; want %q", prefix, all, want)
		}
	}
}

func testRenameFile(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d := mkDomain(t, s, "dom")
	f1 := mkFile(t, s, d.ID, "one")
	f2 := mkFile(t, s, d.ID, "two")
	ok(t, s.RenameFile(ctx, d.ID, "one", "uno%"), "RenameFile")
	got, err := s.FileByKey(ctx, d.ID, "uno%")
	ok(t, err, "FileByKey(new name)")
	if got.Fid != f1.Fid || got.Key != "uno%" {
		t.Errorf("FileByKey(uno%%) = %+v; want fid %d under the new key", got, f1.Fid)
	}
	_, err = s.FileByKey(ctx, d.ID, "one")
	isErr(t, err, store.ErrNotFound, "FileByKey(old name)")
	isErr(t, s.RenameFile(ctx, d.ID, "one", "three"), store.ErrNotFound, "RenameFile of a missing key")
	_, err = s.FileByKey(ctx, d.ID, "three")
	isErr(t, err, store.ErrNotFound, "FileByKey after refused rename")
	isErr(t, s.RenameFile(ctx, d.ID, "uno%", "two"), store.ErrDuplicate, "RenameFile onto an existing key")
	if got := fileOf(t, s, f2.Fid); got != f2 {
		t.Errorf("target after refused rename = %+v; want %+v", got, f2)
	}
	if got, err := s.FileByKey(ctx, d.ID, "uno%"); err != nil || got.Fid != f1.Fid {
		t.Errorf("source after refused rename = %+v, %v; want fid %d", got, err, f1.Fid)
	}
	isErr(t, s.RenameFile(ctx, d.ID+1, "two", "deux"), store.ErrNotFound, "RenameFile in another domain")
}

func testSetFileClass(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d := mkDomain(t, s, "dom")
	c, err := s.CreateClass(ctx, store.Class{DomainID: d.ID, Name: "c", MinDevCount: 2})
	ok(t, err, "CreateClass")
	f := mkFile(t, s, d.ID, "k")
	ok(t, s.SetFileClass(ctx, f.Fid, c.ID), "SetFileClass")
	if got := fileOf(t, s, f.Fid).ClassID; got != c.ID {
		t.Errorf("ClassID after SetFileClass = %d; want %d", got, c.ID)
	}
	isErr(t, s.SetFileClass(ctx, f.Fid+1, 0), store.ErrNotFound, "SetFileClass of an unknown fid")
	if got := fileOf(t, s, f.Fid).ClassID; got != c.ID {
		t.Errorf("ClassID after a refused SetFileClass of another fid = %d; want %d", got, c.ID)
	}
	_, err = s.File(ctx, f.Fid+1)
	isErr(t, err, store.ErrNotFound, "File after a refused SetFileClass")
}

func testDeleteFile(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	devs := mkDevices(t, a, 2)
	d := mkDomain(t, a, "dom")
	f := mkFile(t, a, d.ID, "k", devs...)
	keep := mkFile(t, a, d.ID, "keep", devs[0])
	ok(t, a.SetChecksum(ctx, store.Checksum{Fid: f.Fid, HashType: store.HashMD5, Sum: make([]byte, 16)}), "SetChecksum")
	ok(t, b.DeleteFile(ctx, f.Fid), "DeleteFile")
	_, err := a.File(ctx, f.Fid)
	isErr(t, err, store.ErrNotFound, "File after DeleteFile")
	_, err = a.FileByKey(ctx, d.ID, "k")
	isErr(t, err, store.ErrNotFound, "FileByKey after DeleteFile")
	q, err := a.QueueItem(ctx, store.QueueDelete, f.Fid)
	ok(t, err, "QueueItem(delete) after DeleteFile")
	if q.Fid != f.Fid || q.NextTry.Equal(store.EndOfTime) {
		t.Errorf("delete row = %+v; want fid %d, not parked", q, f.Fid)
	}
	if on := fileOnOf(t, a, f.Fid); len(on) != 2 {
		t.Errorf("FileOn after DeleteFile = %v; want both copies left for the delete worker", on)
	}
	if _, err := a.Checksum(ctx, f.Fid); err != nil {
		t.Errorf("Checksum after DeleteFile: %v; want it left for the delete worker", err)
	}
	isErr(t, b.DeleteFile(ctx, f.Fid), store.ErrNotFound, "second DeleteFile")
	if n, err := a.QueueLength(ctx, store.QueueDelete); err != nil || n != 1 {
		t.Errorf("QueueLength(delete) = %d, %v; want 1", n, err)
	}
	if got := fileOf(t, a, keep.Fid); got != keep {
		t.Errorf("other file after DeleteFile = %+v; want %+v", got, keep)
	}
	// The key is free for a new upload, which replaces nothing.
	fid, err := a.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "k"})
	ok(t, err, "CreateTempFile")
	res, err := a.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: "k"})
	ok(t, err, "CommitFile")
	if res.ReplacedFid != 0 {
		t.Errorf("CommitFile after DeleteFile replaced %d; want 0", res.ReplacedFid)
	}
}

func testCommitFileReplaceRace(t *testing.T, e *env) {
	ss := []*store.Store{e.open(t), e.open(t), e.open(t)}
	ctx := t.Context()
	d := mkDomain(t, ss[0], "dom")
	const uploads = 9
	fids := make([]int64, uploads)
	for i := range fids {
		fid, err := ss[i%len(ss)].CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "hot"})
		ok(t, err, "CreateTempFile")
		fids[i] = fid
	}
	// Nine uploads of one key close at once: one fid ends owning the key
	// and every other one is queued for deletion, none orphaned.
	res := make([]store.CommitResult, uploads)
	errs := parallel(uploads, func(i int) error {
		var err error
		res[i], err = ss[i%len(ss)].CommitFile(ctx, store.Commit{Fid: fids[i], DomainID: d.ID, Key: "hot", Length: int64(i)})
		return err
	})
	noErrs(t, errs, "CommitFile")
	owner, err := ss[0].FileByKey(ctx, d.ID, "hot")
	ok(t, err, "FileByKey")
	replaced := map[int64]int{}
	for _, r := range res {
		if r.ReplacedFid != 0 {
			replaced[r.ReplacedFid]++
		}
	}
	for _, fid := range fids {
		if fid == owner.Fid {
			if replaced[fid] != 0 {
				t.Errorf("owner %d reported replaced %d times; want 0", fid, replaced[fid])
			}
			continue
		}
		if replaced[fid] != 1 {
			t.Errorf("fid %d reported replaced %d times; want exactly once", fid, replaced[fid])
		}
		if _, err := ss[1].File(ctx, fid); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("File(%d) of a replaced upload: got error %v; want %v", fid, err, store.ErrNotFound)
		}
		if _, err := ss[1].QueueItem(ctx, store.QueueDelete, fid); err != nil {
			t.Errorf("replaced fid %d is not queued for deletion (%v); its blobs would be orphaned", fid, err)
		}
	}
	if n := queueLen(t, ss[0], store.QueueDelete); n != uploads-1 {
		t.Errorf("QueueLength(delete) = %d; want %d", n, uploads-1)
	}
	if keys, err := ss[0].ListKeys(ctx, d.ID, "", "", 100); err != nil || !slices.Equal(keys, []string{"hot"}) {
		t.Errorf("ListKeys() = %q, %v; want [hot]", keys, err)
	}
}

func testRenameRace(t *testing.T, e *env) {
	ss := []*store.Store{e.open(t), e.open(t), e.open(t)}
	ctx := t.Context()
	d := mkDomain(t, ss[0], "dom")
	const n = 6
	var fids []int64
	for i := range n {
		fids = append(fids, mkFile(t, ss[0], d.ID, "src"+strconv.Itoa(i)).Fid)
	}
	errs := parallel(n, func(i int) error {
		return ss[i%len(ss)].RenameFile(ctx, d.ID, "src"+strconv.Itoa(i), "target")
	})
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won < 0:
			won = i
		case err == nil:
			t.Errorf("renames %d and %d onto one key both succeeded; want one", won, i)
		case !errors.Is(err, store.ErrDuplicate):
			t.Errorf("losing rename %d: got error %v; want %v", i, err, store.ErrDuplicate)
		}
	}
	if won < 0 {
		t.Fatalf("no rename succeeded; want one")
	}
	got, err := ss[1].FileByKey(ctx, d.ID, "target")
	ok(t, err, "FileByKey(target)")
	if got.Fid != fids[won] {
		t.Errorf("target owned by %d; want the winner's %d", got.Fid, fids[won])
	}
	keys, err := ss[1].ListKeys(ctx, d.ID, "", "", 100)
	ok(t, err, "ListKeys")
	if len(keys) != n {
		t.Errorf("ListKeys() = %q; want %d keys: losers keep their names", keys, n)
	}
}

func testDeleteFileRace(t *testing.T, e *env) {
	ss := []*store.Store{e.open(t), e.open(t), e.open(t)}
	ctx := t.Context()
	d := mkDomain(t, ss[0], "dom")
	for round := range 5 {
		f := mkFile(t, ss[0], d.ID, "k"+strconv.Itoa(round))
		errs := parallel(len(ss), func(i int) error { return ss[i].DeleteFile(ctx, f.Fid) })
		wins := 0
		for i, err := range errs {
			if err == nil {
				wins++
			} else if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("round %d: DeleteFile %d: got error %v; want nil or %v", round, i, err, store.ErrNotFound)
			}
		}
		if wins != 1 {
			t.Errorf("round %d: %d concurrent DeleteFile calls succeeded; want exactly 1", round, wins)
		}
	}
	if n := queueLen(t, ss[0], store.QueueDelete); n != 5 {
		t.Errorf("QueueLength(delete) = %d; want 5, one per fid", n)
	}
}

// testFileByKeyOn: store.FileByKeyOn (the Store's PathsReader, where it has
// one) returns what FileByKey and FileOn return: the file, its devices
// ascending and no other file's, none for a file without copies, and
// ErrNotFound for a key without a file.
func testFileByKeyOn(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	d := mkDomain(t, s, "dom")
	mkFile(t, s, d.ID, "photos/1", 3, 1, 2)
	mkFile(t, s, d.ID, "photos/2", 4)
	mkFile(t, s, d.ID, "bare")
	for _, key := range []string{"photos/1", "photos/2", "bare", "Photos/1", "missing"} {
		f, devs, err := store.FileByKeyOn(ctx, s, d.ID, key)
		wf, werr := s.FileByKey(ctx, d.ID, key)
		if werr != nil {
			if !errors.Is(werr, store.ErrNotFound) {
				t.Fatalf("FileByKey(%q): %v", key, werr)
			}
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("FileByKeyOn(%q) = %+v, %v, %v; want ErrNotFound as FileByKey", key, f, devs, err)
			}
			continue
		}
		ok(t, err, "FileByKeyOn(%q)", key)
		wdevs, err := s.FileOn(ctx, wf.Fid)
		ok(t, err, "FileOn(%d)", wf.Fid)
		if f != wf || !slices.Equal(devs, wdevs) || len(devs) != wf.DevCount {
			t.Errorf("FileByKeyOn(%q) = %+v, %v; want %+v, %v (FileByKey, FileOn)", key, f, devs, wf, wdevs)
		}
	}
	if _, _, err := store.FileByKeyOn(ctx, s, d.ID+1000, "photos/1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FileByKeyOn in a domain without the key: %v; want ErrNotFound", err)
	}
}

// testFileCounts: committed files counted by domain, class and devcount,
// in that order; tempfiles and deleted files do not count.
func testFileCounts(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	got, err := s.FileCounts(ctx)
	ok(t, err, "FileCounts")
	if len(got) != 0 {
		t.Errorf("FileCounts() of an empty database = %v; want none", got)
	}
	devs := mkDevices(t, s, 2)
	d1 := mkDomain(t, s, "d1")
	d2 := mkDomain(t, s, "d2")
	c, err := s.CreateClass(ctx, store.Class{DomainID: d1.ID, Name: "two", MinDevCount: 2})
	ok(t, err, "CreateClass")
	mkFile(t, s, d2.ID, "x", devs[0])
	mkFile(t, s, d1.ID, "a")
	mkFile(t, s, d1.ID, "b", devs[0])
	mkFile(t, s, d1.ID, "c", devs[0])
	gone := mkFile(t, s, d1.ID, "d", devs...)
	mkFile(t, s, d1.ID, "e", devs...)
	fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d1.ID, ClassID: c.ID, Key: "f"})
	ok(t, err, "CreateTempFile")
	_, err = s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d1.ID, ClassID: c.ID, Key: "f", Length: 1, DevIDs: devs[:1]})
	ok(t, err, "CommitFile(%d)", fid)
	_, err = s.CreateTempFile(ctx, store.TempFile{DomainID: d1.ID, ClassID: c.ID, Key: "tmp"})
	ok(t, err, "CreateTempFile")
	ok(t, s.DeleteFile(ctx, gone.Fid), "DeleteFile")
	got, err = s.FileCounts(ctx)
	ok(t, err, "FileCounts")
	lo, hi := min(d1.ID, d2.ID), max(d1.ID, d2.ID)
	byDomain := map[int][]store.FileCount{
		d1.ID: {
			{DomainID: d1.ID, ClassID: 0, DevCount: 0, Files: 1},
			{DomainID: d1.ID, ClassID: 0, DevCount: 1, Files: 2},
			{DomainID: d1.ID, ClassID: 0, DevCount: 2, Files: 1},
			{DomainID: d1.ID, ClassID: c.ID, DevCount: 1, Files: 1},
		},
		d2.ID: {{DomainID: d2.ID, ClassID: 0, DevCount: 1, Files: 1}},
	}
	want := append(slices.Clone(byDomain[lo]), byDomain[hi]...)
	if !slices.Equal(got, want) {
		t.Errorf("FileCounts() = %v; want %v", got, want)
	}
}

// testImportRows: rows copied from another database keep their fids,
// devcounts, due times, fail counts and flags, and fsck times; the fid
// counter moves above them and the floor; a batch with a taken key writes
// nothing.
func testImportRows(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	devs := mkDevices(t, s, 2)
	d := mkDomain(t, s, "dom")
	c, err := s.CreateClass(ctx, store.Class{DomainID: d.ID, Name: "two", MinDevCount: 2})
	ok(t, err, "CreateClass")
	due := time.Unix(1_800_000_000, 0)
	when := time.Unix(1_700_000_000, 0)
	im := store.Import{
		Files: []store.File{
			{Fid: 20, DomainID: d.ID, Key: "b", Length: 5, ClassID: c.ID, DevCount: 2},
			{Fid: 10, DomainID: d.ID, Key: "a", Length: 0, DevCount: 1},
		},
		FileOn:    []store.FileOnRow{{Fid: 20, DevID: devs[0]}, {Fid: 20, DevID: devs[1]}, {Fid: 10, DevID: devs[1]}, {Fid: 30, DevID: devs[0]}},
		Checksums: []store.Checksum{{Fid: 20, HashType: store.HashMD5, Sum: bytes.Repeat([]byte{7}, 16)}},
		Queue: []store.QueueItem{
			{Queue: store.QueueReplicate, Fid: 20, DevID: devs[0], NextTry: due, FailCount: 3, Flags: 1},
			{Queue: store.QueueDelete, Fid: 30, NextTry: due},
			{Queue: store.QueueFsck, Fid: 10, DevID: devs[1], Arg: "a1", NextTry: store.EndOfTime, FailCount: 1},
			{Queue: store.QueueRebalance, Fid: 10, DevID: devs[0], Arg: "r1", NextTry: due, Flags: 2},
		},
		FsckLog:  []store.FsckEvent{{Time: when, Fid: 20, Code: "REPL", DevID: devs[0]}, {Time: when.Add(-time.Hour), Fid: 10, Code: "NOPA"}},
		FidFloor: 25,
		Settings: map[string]string{"mover_progress": "fid 30"},
	}
	ok(t, s.ImportRows(ctx, im), "ImportRows")
	if v, err := s.ServerSetting(ctx, "mover_progress"); err != nil || v != "fid 30" {
		t.Errorf("setting written with the rows = %q, %v; want \"fid 30\"", v, err)
	}
	for _, want := range im.Files {
		f, err := s.File(ctx, want.Fid)
		ok(t, err, "File(%d)", want.Fid)
		if f != want {
			t.Errorf("File(%d) = %+v; want %+v as imported", want.Fid, f, want)
		}
	}
	if on, err := s.FileOn(ctx, 20); err != nil || !slices.Equal(on, sortedInts(devs)) {
		t.Errorf("FileOn(20) = %v, %v; want %v", on, err, sortedInts(devs))
	}
	if on, err := s.FileOn(ctx, 30); err != nil || !slices.Equal(on, devs[:1]) {
		t.Errorf("FileOn(30) (a deleted file's copy) = %v, %v; want %v", on, err, devs[:1])
	}
	if cs, err := s.Checksum(ctx, 20); err != nil || !bytes.Equal(cs.Sum, im.Checksums[0].Sum) || cs.HashType != store.HashMD5 {
		t.Errorf("Checksum(20) = %+v, %v; want %+v", cs, err, im.Checksums[0])
	}
	for _, want := range im.Queue {
		it, err := s.QueueItem(ctx, want.Queue, want.Fid)
		ok(t, err, "QueueItem(%s, %d)", want.Queue, want.Fid)
		if !it.NextTry.Equal(want.NextTry) || it.FailCount != want.FailCount || it.Flags != want.Flags ||
			it.DevID != want.DevID || it.Arg != want.Arg {
			t.Errorf("QueueItem(%s, %d) = %+v; want %+v as imported", want.Queue, want.Fid, it, want)
		}
	}
	evs, err := s.FsckEvents(ctx, 0, 10)
	ok(t, err, "FsckEvents")
	if len(evs) != 2 || !evs[0].Time.Equal(when) || evs[0].Code != "REPL" || evs[0].DevID != devs[0] ||
		!evs[1].Time.Equal(when.Add(-time.Hour)) || evs[1].Fid != 10 || evs[0].LogID >= evs[1].LogID {
		t.Errorf("FsckEvents = %+v; want REPL at %v then NOPA an hour earlier, in that order", evs, when)
	}
	fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "new"})
	ok(t, err, "CreateTempFile")
	if fid <= 30 {
		t.Errorf("CreateTempFile after the import got fid %d; want above 30, the largest imported", fid)
	}
	floor := fid + 1000
	ok(t, s.ImportRows(ctx, store.Import{FidFloor: floor}), "ImportRows(floor)")
	if next, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "newer"}); err != nil || next <= floor {
		t.Errorf("CreateTempFile after a floor of %d got %d, %v; want above the floor", floor, next, err)
	}

	// A batch one of whose keys is taken writes nothing.
	bad := store.Import{
		Files:    []store.File{{Fid: 500, DomainID: d.ID, Key: "c", DevCount: 1}, {Fid: 501, DomainID: d.ID, Key: "a", DevCount: 0}},
		FileOn:   []store.FileOnRow{{Fid: 500, DevID: devs[0]}},
		Settings: map[string]string{"mover_progress": "fid 501"},
	}
	if err := s.ImportRows(ctx, bad); !errors.Is(err, store.ErrDuplicate) {
		t.Errorf("ImportRows with a taken (domain, key): %v; want ErrDuplicate", err)
	}
	if _, err := s.File(ctx, 500); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("File(500) after a refused import: %v; want ErrNotFound (nothing written)", err)
	}
	if on, _ := s.FileOn(ctx, 500); len(on) != 0 {
		t.Errorf("FileOn(500) after a refused import = %v; want none", on)
	}
	if v, _ := s.ServerSetting(ctx, "mover_progress"); v != "fid 30" {
		t.Errorf("setting after a refused import = %q; want it unchanged (\"fid 30\")", v)
	}
	if err := s.ImportRows(ctx, store.Import{Files: []store.File{{Fid: 0, DomainID: d.ID, Key: "z"}}}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("ImportRows of fid 0: %v; want ErrInvalid", err)
	}
}

// testFidCounter: the counter is 0 on a new database, then at least every
// fid handed out or named, even once its rows are gone, and an import's
// floor.
func testFidCounter(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	n, err := s.FidCounter(ctx)
	ok(t, err, "FidCounter")
	if n != 0 {
		t.Errorf("FidCounter() of a new database = %d; want 0", n)
	}
	d := mkDomain(t, s, "dom")
	fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "a"})
	ok(t, err, "CreateTempFile")
	if n, err = s.FidCounter(ctx); err != nil || n < fid {
		t.Errorf("FidCounter() after fid %d was handed out = %d, %v", fid, n, err)
	}
	named, err := s.CreateTempFile(ctx, store.TempFile{Fid: fid + 1000, DomainID: d.ID, Key: "b"})
	ok(t, err, "CreateTempFile(named)")
	ok(t, s.DeleteTempFile(ctx, named), "DeleteTempFile")
	if n, err = s.FidCounter(ctx); err != nil || n < named {
		t.Errorf("FidCounter() after named fid %d (its row gone) = %d, %v; want at least it", named, n, err)
	}
	ok(t, s.ImportRows(ctx, store.Import{FidFloor: named + 5000}), "ImportRows(floor)")
	if n, err = s.FidCounter(ctx); err != nil || n < named+5000 {
		t.Errorf("FidCounter() after a floor of %d = %d, %v", named+5000, n, err)
	}
}
