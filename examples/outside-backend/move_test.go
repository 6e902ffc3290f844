package pglike_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/dump"
	"github.com/gomogile/gomogile/store/migrate"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

// An outside backend is a source and a target of a move between backends
// with nothing written for it: SQLite → pglike → SQLite keeps the
// installation's dump byte for byte.
func TestMove_SourceAndTarget(t *testing.T) {
	ctx := t.Context()
	dsns := []string{
		"sqlite:///" + filepath.Join(t.TempDir(), "a.db"),
		newHarness(t, "pglike").dsn,
		"sqlite:///" + filepath.Join(t.TempDir(), "b.db"),
	}
	open := func(dsn string) *store.Store {
		st, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatalf("open %s: %v", store.RedactDSN(dsn), err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	src := open(dsns[0])
	d, err := src.CreateDomain(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.CreateHost(ctx, store.Host{ID: 1, Name: "h", IP: "10.0.0.1", HTTPPort: 7500, Status: store.HostAlive}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.CreateDevice(ctx, store.Device{ID: 1, HostID: 1, Status: store.DeviceAlive, Weight: 100}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		key := fmt.Sprintf("k%02d", i)
		fid, err := src.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := src.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: key, Length: int64(i), DevIDs: []int{1},
			Checksum: &store.Checksum{HashType: store.HashMD5, Sum: bytes.Repeat([]byte{byte(i)}, 16)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.AppendFsckLog(ctx, store.FsckEvent{Fid: 3, Code: "NOPA"}); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := dump.Write(ctx, src, &want); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(dsns); i++ {
		from, to := open(dsns[i]), open(dsns[i+1])
		if err := migrate.Move(ctx, from, to, migrate.Options{Batch: 7, SourceQuiesced: true, Source: store.RedactDSN(dsns[i])}); err != nil {
			t.Fatalf("move %s -> %s: %v", store.RedactDSN(dsns[i]), store.RedactDSN(dsns[i+1]), err)
		}
		var got bytes.Buffer
		if err := dump.Write(ctx, to, &got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("after the move to %s the dump differs:\n%s\n---\n%s", store.RedactDSN(dsns[i+1]), want.Bytes(), got.Bytes())
		}
	}
}
