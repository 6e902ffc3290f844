package conformance

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

func testServerSettings(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	_, err := a.ServerSetting(ctx, "conformance.missing")
	isErr(t, err, store.ErrNotFound, "ServerSetting of an unset key")
	want := map[string]string{
		"conformance.a":     "1",
		"conformance.B":     "é日本 %_\\",
		"conformance.space": "a b",
	}
	for k, v := range want {
		ok(t, a.SetServerSetting(ctx, k, v), "SetServerSetting(%q)", k)
	}
	ok(t, b.SetServerSetting(ctx, "conformance.a", "2"), "SetServerSetting overwrite")
	want["conformance.a"] = "2"
	for k, v := range want {
		got, err := b.ServerSetting(ctx, k)
		ok(t, err, "ServerSetting(%q)", k)
		if got != v {
			t.Errorf("ServerSetting(%q) = %q; want %q", k, got, v)
		}
	}
	if _, err := a.ServerSetting(ctx, "conformance.b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ServerSetting(conformance.b) with only conformance.B set: got error %v; want %v", err, store.ErrNotFound)
	}
	all, err := a.ServerSettings(ctx)
	ok(t, err, "ServerSettings")
	for k, v := range want {
		if all[k] != v {
			t.Errorf("ServerSettings()[%q] = %q; want %q", k, all[k], v)
		}
	}
	ok(t, a.DeleteServerSetting(ctx, "conformance.a"), "DeleteServerSetting")
	ok(t, b.DeleteServerSetting(ctx, "conformance.a"), "second DeleteServerSetting")
	_, err = b.ServerSetting(ctx, "conformance.a")
	isErr(t, err, store.ErrNotFound, "ServerSetting after delete")
	all, err = b.ServerSettings(ctx)
	ok(t, err, "ServerSettings")
	if _, there := all["conformance.a"]; there {
		t.Errorf("ServerSettings() still has a deleted key")
	}
	if all["conformance.B"] != want["conformance.B"] {
		t.Errorf("ServerSettings()[conformance.B] = %q after deleting another key; want %q", all["conformance.B"], want["conformance.B"])
	}
}

func testIncrServerSetting(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	const key = "conformance.n"
	for _, step := range []struct{ delta, want int64 }{{5, 5}, {1, 6}, {-10, -4}, {1 << 40, 1<<40 - 4}} {
		got, err := s.IncrServerSetting(ctx, key, step.delta)
		ok(t, err, "IncrServerSetting(%d)", step.delta)
		if got != step.want {
			t.Errorf("IncrServerSetting(%d) = %d; want %d", step.delta, got, step.want)
		}
	}
	v, err := s.ServerSetting(ctx, key)
	ok(t, err, "ServerSetting")
	if v != strconv.FormatInt(1<<40-4, 10) {
		t.Errorf("ServerSetting after increments = %q; want %d", v, int64(1<<40-4))
	}
	ok(t, s.SetServerSetting(ctx, key, "41"), "SetServerSetting")
	if got, err := s.IncrServerSetting(ctx, key, 1); err != nil || got != 42 {
		t.Errorf("IncrServerSetting(1) after setting 41 = %d, %v; want 42", got, err)
	}
}

func testIncrServerSettingConcurrent(t *testing.T, e *env) {
	ss := []*store.Store{e.open(t), e.open(t), e.open(t)}
	const key = "conformance.hits"
	const workers, each = 9, 12
	seen := make([][]int64, workers)
	errs := parallel(workers, func(w int) error {
		for range each {
			n, err := ss[w%len(ss)].IncrServerSetting(t.Context(), key, 1)
			if err != nil {
				return err
			}
			seen[w] = append(seen[w], n)
		}
		return nil
	})
	noErrs(t, errs, "IncrServerSetting")
	// Every increment returned a different value: none was lost or shared.
	got := map[int64]bool{}
	for _, vs := range seen {
		for _, v := range vs {
			if got[v] {
				t.Errorf("two increments both returned %d; want each its own value", v)
			}
			got[v] = true
		}
	}
	v, err := ss[0].ServerSetting(t.Context(), key)
	ok(t, err, "ServerSetting")
	if v != strconv.Itoa(workers*each) {
		t.Errorf("counter after %d concurrent increments = %s; want %d", workers*each, v, workers*each)
	}
}

func testChecksums(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	_, err := a.Checksum(ctx, 1)
	isErr(t, err, store.ErrNotFound, "Checksum of an unknown fid")
	sum := []byte{0x00, 0xff, 0x10, 0x00, 0x80, 0x7f, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0}
	ok(t, a.SetChecksum(ctx, store.Checksum{Fid: 1, HashType: store.HashMD5, Sum: sum}), "SetChecksum")
	ok(t, a.SetChecksum(ctx, store.Checksum{Fid: 2, HashType: store.HashMD5, Sum: bytes.Repeat([]byte{0xaa}, 16)}), "SetChecksum(2)")
	got, err := b.Checksum(ctx, 1)
	ok(t, err, "Checksum")
	if got.Fid != 1 || got.HashType != store.HashMD5 || !bytes.Equal(got.Sum, sum) {
		t.Errorf("Checksum(1) = {Fid:%d HashType:%d Sum:%x}; want {Fid:1 HashType:1 Sum:%x}", got.Fid, got.HashType, got.Sum, sum)
	}
	other := []byte{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}
	ok(t, b.SetChecksum(ctx, store.Checksum{Fid: 1, HashType: store.HashMD5, Sum: other}), "SetChecksum replace")
	got, err = a.Checksum(ctx, 1)
	ok(t, err, "Checksum")
	if !bytes.Equal(got.Sum, other) {
		t.Errorf("Checksum(1) after replace = %x; want %x", got.Sum, other)
	}
	ok(t, a.DeleteChecksum(ctx, 1), "DeleteChecksum")
	ok(t, a.DeleteChecksum(ctx, 1), "second DeleteChecksum")
	_, err = b.Checksum(ctx, 1)
	isErr(t, err, store.ErrNotFound, "Checksum after delete")
	if got, err := b.Checksum(ctx, 2); err != nil || !bytes.Equal(got.Sum, bytes.Repeat([]byte{0xaa}, 16)) {
		t.Errorf("Checksum(2) after deleting 1 = %+v, %v; want it intact", got, err)
	}
}

func testFsckLog(t *testing.T, e *env) {
	a, b := e.open(t), e.open(t)
	ctx := t.Context()
	evs, err := a.FsckEvents(ctx, 0, 100)
	ok(t, err, "FsckEvents")
	if len(evs) != 0 {
		t.Fatalf("FsckEvents() after Reset = %+v; want none", evs)
	}
	in := []store.FsckEvent{
		{Fid: 10, Code: "NOPA"},
		{Fid: 11, Code: "MISS", DevID: 3},
		{Fid: 12, Code: "BCNT"},
		{Fid: 10, Code: "MISS", DevID: 4},
		{Fid: 13, Code: "REPL"},
	}
	for i, ev := range in {
		s := a
		if i%2 == 1 {
			s = b
		}
		ok(t, s.AppendFsckLog(ctx, ev), "AppendFsckLog(%+v)", ev)
	}
	now := dbNow(t, a)
	evs, err = b.FsckEvents(ctx, 0, 100)
	ok(t, err, "FsckEvents")
	if len(evs) != len(in) {
		t.Fatalf("FsckEvents() = %+v; want %d events", evs, len(in))
	}
	for i, ev := range evs {
		if ev.Fid != in[i].Fid || ev.Code != in[i].Code || ev.DevID != in[i].DevID {
			t.Errorf("event %d = %+v; want %+v", i, ev, in[i])
		}
		if i > 0 && ev.LogID <= evs[i-1].LogID {
			t.Errorf("event %d has LogID %d after %d; want ascending", i, ev.LogID, evs[i-1].LogID)
		}
		if !within(ev.Time, now, time.Minute) {
			t.Errorf("event %d Time = %v; want the database clock, about %v", i, ev.Time, now)
		}
	}
	page, err := a.FsckEvents(ctx, evs[1].LogID, 2)
	ok(t, err, "FsckEvents(after, 2)")
	if len(page) != 2 || page[0].LogID != evs[2].LogID || page[1].LogID != evs[3].LogID {
		t.Errorf("FsckEvents(after %d, limit 2) = %+v; want events 2 and 3 of %+v", evs[1].LogID, page, evs)
	}
	counts, err := a.FsckEventCounts(ctx)
	ok(t, err, "FsckEventCounts")
	if want := map[string]int64{"NOPA": 1, "MISS": 2, "BCNT": 1, "REPL": 1}; !reflect.DeepEqual(counts, want) {
		t.Errorf("FsckEventCounts() = %v; want %v", counts, want)
	}
	ok(t, b.ClearFsckLog(ctx), "ClearFsckLog")
	evs, err = a.FsckEvents(ctx, 0, 100)
	ok(t, err, "FsckEvents")
	if len(evs) != 0 {
		t.Errorf("FsckEvents() after ClearFsckLog = %+v; want none", evs)
	}
	counts, err = a.FsckEventCounts(ctx)
	ok(t, err, "FsckEventCounts")
	if len(counts) != 0 {
		t.Errorf("FsckEventCounts() after ClearFsckLog = %v; want none", counts)
	}
}

// testChecksumsPaging: Checksums lists every stored checksum above a fid,
// ascending, a page at a time.
func testChecksumsPaging(t *testing.T, e *env) {
	s := e.open(t)
	ctx := t.Context()
	var want []store.Checksum
	for fid := int64(1); fid <= 7; fid++ {
		c := store.Checksum{Fid: fid * 10, HashType: store.HashMD5, Sum: bytes.Repeat([]byte{byte(fid)}, 16)}
		ok(t, s.SetChecksum(ctx, c), "SetChecksum(%d)", c.Fid)
		want = append(want, c)
	}
	ok(t, s.DeleteChecksum(ctx, 30), "DeleteChecksum(30)")
	want = slices.DeleteFunc(want, func(c store.Checksum) bool { return c.Fid == 30 })
	for _, page := range []int{1, 3, 100} {
		var got []store.Checksum
		after := int64(0)
		for n := 0; n < 100; n++ {
			cs, err := s.Checksums(ctx, after, page)
			ok(t, err, "Checksums(%d, %d)", after, page)
			got = append(got, cs...)
			if len(cs) < page {
				break
			}
			after = cs[len(cs)-1].Fid
		}
		if !slices.EqualFunc(got, want, func(a, b store.Checksum) bool {
			return a.Fid == b.Fid && a.HashType == b.HashType && bytes.Equal(a.Sum, b.Sum)
		}) {
			t.Errorf("Checksums in pages of %d = %v; want %v", page, got, want)
		}
	}
}
