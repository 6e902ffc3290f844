package tracker

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

// The file counts are read again only once fileCountsEvery has passed
// since the last try, and a failed count is not tried sooner either (the
// counts before it stay, with their time).
func TestFileCounts_KeptForAMinute(t *testing.T) {
	ctx := t.Context()
	st, err := store.Open(ctx, "sqlite:///"+filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d, err := st.CreateDomain(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	add := func(key string) {
		fid, err := st.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	files := func(c []store.FileCount) int64 {
		var n int64
		for _, fc := range c {
			n += fc.Files
		}
		return n
	}
	var fc fileCounts
	t0 := time.Now()
	add("a")
	c, at, err := fc.get(ctx, st, t0)
	if err != nil || files(c) != 1 || !at.Equal(t0) {
		t.Fatalf("first get = %v, %v, %v; want 1 file counted at %v", c, at, err, t0)
	}
	add("b")
	if c, at, _ = fc.get(ctx, st, t0.Add(fileCountsEvery-time.Second)); files(c) != 1 || !at.Equal(t0) {
		t.Errorf("get within a minute = %v at %v; want the kept count (1 file at %v)", c, at, t0)
	}
	dead, cancel := context.WithCancel(ctx)
	cancel()
	t1 := t0.Add(fileCountsEvery)
	if c, at, err = fc.get(dead, st, t1); !errors.Is(err, context.Canceled) || files(c) != 1 || !at.Equal(t0) {
		t.Errorf("failed count = %v at %v, %v; want the error and the kept count (1 file at %v)", c, at, err, t0)
	}
	if c, _, err = fc.get(ctx, st, t1.Add(time.Second)); !errors.Is(err, context.Canceled) || files(c) != 1 {
		t.Errorf("get a second after a failed count = %v, %v; want no new try", c, err)
	}
	t2 := t1.Add(fileCountsEvery)
	if c, at, err = fc.get(ctx, st, t2); err != nil || files(c) != 2 || !at.Equal(t2) {
		t.Errorf("get a minute after the failure = %v at %v, %v; want 2 files at %v", c, at, err, t2)
	}
}

// summarize: one row per domain in name order; a file is short of copies
// against its own class's mindevcount, or default_mindevcount for the
// default class; counts of a domain or class gone since are left out.
func TestSummarize(t *testing.T) {
	domains := []store.Domain{{ID: 2, Name: "b"}, {ID: 1, Name: "a"}}
	classes := []store.Class{{DomainID: 1, ID: 1, Name: "three", MinDevCount: 3}}
	counts := []store.FileCount{
		{DomainID: 1, ClassID: 0, DevCount: 1, Files: 5}, // default wants 2
		{DomainID: 1, ClassID: 0, DevCount: 2, Files: 7},
		{DomainID: 1, ClassID: 1, DevCount: 2, Files: 11}, // wants 3
		{DomainID: 1, ClassID: 1, DevCount: 3, Files: 13},
		{DomainID: 1, ClassID: 9, DevCount: 0, Files: 100}, // class gone
		{DomainID: 2, ClassID: 0, DevCount: 2, Files: 17},
		{DomainID: 3, ClassID: 0, DevCount: 0, Files: 1000}, // domain gone
	}
	got := summarize(domains, classes, counts, 2)
	want := statusNamespace{Domains: 2, Classes: 1, Files: 53, TooFew: 16, PerDom: []statusDomain{
		{Name: "a", Classes: 1, Files: 36, TooFew: 16},
		{Name: "b", Files: 17},
	}}
	if got.Domains != want.Domains || got.Classes != want.Classes || got.Files != want.Files || got.TooFew != want.TooFew ||
		!slices.Equal(got.PerDom, want.PerDom) {
		t.Errorf("summarize = %+v; want %+v", got, want)
	}
}
