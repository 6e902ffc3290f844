package conformance

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/gomogile/gomogile/store"
)

func testAddFileOn(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	devs := mkDevices(t, a, 3)
	d := mkDomain(t, a, "dom")
	f := mkFile(t, a, d.ID, "k", devs[0])
	added, err := b.AddFileOn(ctx, f.Fid, devs[2])
	ok(t, err, "AddFileOn")
	if !added {
		t.Errorf("AddFileOn of a new copy reported false; want true")
	}
	added, err = a.AddFileOn(ctx, f.Fid, devs[2])
	ok(t, err, "AddFileOn again")
	if added {
		t.Errorf("AddFileOn of an existing copy reported true; want false")
	}
	added, err = a.AddFileOn(ctx, f.Fid, devs[1])
	ok(t, err, "AddFileOn")
	if !added {
		t.Errorf("AddFileOn of a new copy reported false; want true")
	}
	if on := fileOnOf(t, b, f.Fid); !reflect.DeepEqual(on, devs) {
		t.Errorf("FileOn() = %v; want %v, ascending", on, devs)
	}
	if got := fileOf(t, b, f.Fid).DevCount; got != 3 {
		t.Errorf("DevCount = %d; want 3", got)
	}
}

func testRemoveFileOn(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	devs := mkDevices(t, a, 3)
	d := mkDomain(t, a, "dom")
	f := mkFile(t, a, d.ID, "k", devs...)
	removed, err := b.RemoveFileOn(ctx, f.Fid, devs[1])
	ok(t, err, "RemoveFileOn")
	if !removed {
		t.Errorf("RemoveFileOn of a held copy reported false; want true")
	}
	removed, err = a.RemoveFileOn(ctx, f.Fid, devs[1])
	ok(t, err, "RemoveFileOn again")
	if removed {
		t.Errorf("RemoveFileOn of an absent copy reported true; want false")
	}
	if on := fileOnOf(t, a, f.Fid); !reflect.DeepEqual(on, []int{devs[0], devs[2]}) {
		t.Errorf("FileOn() = %v; want %v", on, []int{devs[0], devs[2]})
	}
	if got := fileOf(t, a, f.Fid).DevCount; got != 2 {
		t.Errorf("DevCount = %d; want 2", got)
	}
	for _, dev := range []int{devs[0], devs[2]} {
		_, err := a.RemoveFileOn(ctx, f.Fid, dev)
		ok(t, err, "RemoveFileOn")
	}
	if got := fileOf(t, a, f.Fid).DevCount; got != 0 {
		t.Errorf("DevCount with no copies = %d; want 0", got)
	}
}

func testFileOnWithoutFile(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	devs := mkDevices(t, s, 3)
	d := mkDomain(t, s, "dom")
	// Replication may record copies of a fid still being uploaded.
	fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "k"})
	ok(t, err, "CreateTempFile")
	added, err := s.AddFileOn(ctx, fid, devs[0])
	ok(t, err, "AddFileOn of a tempfile's fid")
	if !added {
		t.Errorf("AddFileOn reported false; want true")
	}
	if on := fileOnOf(t, s, fid); !reflect.DeepEqual(on, devs[:1]) {
		t.Errorf("FileOn() = %v; want %v", on, devs[:1])
	}
	_, err = s.File(ctx, fid)
	isErr(t, err, store.ErrNotFound, "File of an uncommitted fid after AddFileOn")
	// The commit's devcount counts every file_on row of the fid.
	res, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: "k", DevIDs: devs[1:]})
	ok(t, err, "CommitFile")
	if on := fileOnOf(t, s, fid); !reflect.DeepEqual(on, devs) {
		t.Errorf("FileOn() after commit = %v; want %v", on, devs)
	}
	if res.File.DevCount != 3 || fileOf(t, s, fid).DevCount != 3 {
		t.Errorf("DevCount after commit = %d (stored %d); want 3 = COUNT(file_on)", res.File.DevCount, fileOf(t, s, fid).DevCount)
	}
}

func testDevCountConcurrent(t *testing.T, e *env) {
	s := e.open(t)
	ss := []*store.Store{s, e.open(t), e.open(t)}
	devs := mkDevices(t, s, 6)
	d := mkDomain(t, s, "dom")
	var fids []int64
	for i := range 3 {
		fids = append(fids, mkFile(t, s, d.ID, fmt.Sprintf("k%d", i), devs[0]).Fid)
	}
	const workers, iters = 6, 30
	errs := parallel(workers, func(w int) error {
		st := ss[w%len(ss)]
		rng := rand.New(rand.NewPCG(uint64(w), 42))
		for range iters {
			fid := fids[rng.IntN(len(fids))]
			dev := devs[rng.IntN(len(devs))]
			var err error
			if rng.IntN(2) == 0 {
				_, err = st.AddFileOn(t.Context(), fid, dev)
			} else {
				_, err = st.RemoveFileOn(t.Context(), fid, dev)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	noErrs(t, errs, "AddFileOn/RemoveFileOn")
	for _, fid := range fids {
		on := fileOnOf(t, s, fid)
		f := fileOf(t, s, fid)
		if f.DevCount != len(on) {
			t.Errorf("fid %d: DevCount = %d, COUNT(file_on) = %d (%v); want equal under concurrency", fid, f.DevCount, len(on), on)
		}
		n, err := s.SyncDevCount(t.Context(), fid)
		ok(t, err, "SyncDevCount(%d)", fid)
		if n != len(on) {
			t.Errorf("SyncDevCount(%d) = %d; want %d", fid, n, len(on))
		}
	}
}

func testSyncDevCount(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	devs := mkDevices(t, s, 3)
	d := mkDomain(t, s, "dom")
	f := mkFile(t, s, d.ID, "k", devs...)
	n, err := s.SyncDevCount(ctx, f.Fid)
	ok(t, err, "SyncDevCount")
	if n != 3 {
		t.Errorf("SyncDevCount() = %d; want 3", n)
	}
	if got := fileOf(t, s, f.Fid).DevCount; got != 3 {
		t.Errorf("DevCount after SyncDevCount = %d; want 3", got)
	}
	_, err = s.SyncDevCount(ctx, f.Fid+100)
	isErr(t, err, store.ErrNotFound, "SyncDevCount of an unknown fid")
}

func testFidsOnDevice(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	devs := mkDevices(t, s, 2)
	d := mkDomain(t, s, "dom")
	var want []int64
	for i := range 23 {
		on := []int{devs[1]}
		if i%3 != 0 {
			on = append(on, devs[0])
		}
		f := mkFile(t, s, d.ID, fmt.Sprintf("k%02d", i), on...)
		if i%3 != 0 {
			want = append(want, f.Fid)
		}
	}
	var got []int64
	var after int64
	for page := 0; ; page++ {
		if page > 23 {
			t.Fatalf("paging FidsOnDevice does not end")
		}
		fids, err := s.FidsOnDevice(ctx, devs[0], after, 4)
		ok(t, err, "FidsOnDevice(%d, %d, 4)", devs[0], after)
		if len(fids) > 4 {
			t.Fatalf("FidsOnDevice(limit 4) returned %d fids", len(fids))
		}
		if len(fids) == 0 {
			break
		}
		got = append(got, fids...)
		after = fids[len(fids)-1]
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FidsOnDevice pages = %v; want %v", got, want)
	}
	none, err := s.FidsOnDevice(ctx, devs[0]+100, 0, 10)
	ok(t, err, "FidsOnDevice of an empty device")
	if len(none) != 0 {
		t.Errorf("FidsOnDevice of an unknown device = %v; want none", none)
	}
}

// testFileOnRowsPaging: FileOnRows walks every copy of every file in
// (fid, devid) order, a page at a time, whatever the page size; a removed
// copy is gone from it.
func testFileOnRowsPaging(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	devs := mkDevices(t, s, 3)
	d := mkDomain(t, s, "dom")
	var want []store.FileOnRow
	for i, on := range [][]int{{devs[2], devs[0]}, {devs[1]}, nil, devs, {devs[0]}} {
		f := mkFile(t, s, d.ID, fmt.Sprintf("k%d", i), on...)
		for _, dev := range sortedInts(on) {
			want = append(want, store.FileOnRow{Fid: f.Fid, DevID: dev})
		}
	}
	drop := want[4] // the second copy of the file on every device
	_, err := s.RemoveFileOn(ctx, drop.Fid, drop.DevID)
	ok(t, err, "RemoveFileOn(%d, %d)", drop.Fid, drop.DevID)
	want = slices.DeleteFunc(want, func(r store.FileOnRow) bool { return r == drop })
	for _, page := range []int{1, 2, 4, 100} {
		var got []store.FileOnRow
		after := store.FileOnRow{}
		for n := 0; n < 100; n++ {
			rows, err := s.FileOnRows(ctx, after, page)
			ok(t, err, "FileOnRows(%+v, %d)", after, page)
			if len(rows) > page {
				t.Fatalf("FileOnRows(%+v, %d) returned %d rows", after, page, len(rows))
			}
			got = append(got, rows...)
			if len(rows) < page {
				break
			}
			after = rows[len(rows)-1]
		}
		if !slices.Equal(got, want) {
			t.Errorf("FileOnRows in pages of %d = %v; want %v", page, got, want)
		}
	}
	if _, err := s.FileOnRows(ctx, store.FileOnRow{}, -1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("FileOnRows(limit -1): got %v; want ErrInvalid", err)
	}
}
