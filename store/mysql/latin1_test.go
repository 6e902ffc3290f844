package mysql_test

import (
	"context"
	"encoding/hex"
	"errors"
	"slices"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/store"
)

// A database made by MogileFS 2.73's mogdbsetup on a latin1 server
// (latin1_swedish_ci: case-insensitive, PAD SPACE) behaves as it did under
// MogileFS. What the original answers there, and so what is pinned here:
//   - keys are stored as the bytes the client sent (its DBD::mysql session
//     was latin1 too), so UTF-8 keys written by Perl are found and listed
//     as those bytes, and ours reach Perl the same way;
//   - a lookup is "dkey = ?" under the collation: "Photo", "PHOTO" and
//     "photo " name one file, and an upload of "photo" replaces the file
//     "Photo" (the original deleted the old fid and REPLACEd the row);
//   - "é" and "É" in UTF-8 are distinct (as latin1 bytes they are not case
//     variants of each other);
//   - list_keys' prefix is the original's case-insensitive LIKE; the order
//     is byte order (the tracker's promise on every backend).
func TestOpen_MogdbsetupLatin1(t *testing.T) {
	dsn, perl := testdb.MogdbsetupLatin1MySQL(t)
	ctx := context.Background()
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("store.Open on a mogdbsetup latin1 database: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	var collation string
	if err := perl.QueryRowContext(ctx, "SELECT COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'file' AND COLUMN_NAME = 'dkey'").Scan(&collation); err != nil || collation != "latin1_swedish_ci" {
		t.Fatalf("file.dkey collation = %q, %v; want latin1_swedish_ci", collation, err)
	}
	d, err := s.CreateDomain(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	commit := func(key string) store.CommitResult {
		t.Helper()
		fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: key, Length: 1})
		if err != nil {
			t.Fatalf("CommitFile(%q): %v", key, err)
		}
		return res
	}
	storedHex := func(fid int64) string {
		t.Helper()
		var h string
		if err := perl.QueryRowContext(ctx, "SELECT HEX(dkey) FROM file WHERE fid = ?", fid).Scan(&h); err != nil {
			t.Fatalf("stored key of fid %d: %v", fid, err)
		}
		return h
	}

	t.Run("PerlKeysAreBytes", func(t *testing.T) {
		const key = "café/日本"
		if _, err := perl.ExecContext(ctx, "INSERT INTO file (fid, dmid, dkey, length, classid, devcount) VALUES (1000, ?, ?, 5, 0, 0)", d.ID, key); err != nil {
			t.Fatal(err)
		}
		if got, want := storedHex(1000), hex.EncodeToString([]byte(key)); got != want && got != hexUpper(want) {
			t.Fatalf("Perl's key stored as %s; want its UTF-8 bytes %s", got, want)
		}
		f, err := s.FileByKey(ctx, d.ID, key)
		if err != nil || f.Fid != 1000 || f.Key != key {
			t.Errorf("FileByKey(%q) = %+v, %v; want fid 1000 with that key", key, f, err)
		}
		if got, err := s.ListKeys(ctx, d.ID, "café", "", 10); err != nil || !slices.Equal(got, []string{key}) {
			t.Errorf("ListKeys(café) = %q, %v; want [%q]", got, err, key)
		}
		ours := commit("straße")
		if got := storedHex(ours.File.Fid); got != hexUpper(hex.EncodeToString([]byte("straße"))) {
			t.Errorf("our key straße stored as %s; want its UTF-8 bytes, as Perl reads them", got)
		}
	})

	t.Run("CaseVariantsAreOneKey", func(t *testing.T) {
		first := commit("Photo")
		second := commit("photo") // before: no owner found, a duplicate on each of 64 rounds
		if second.ReplacedFid != first.File.Fid {
			t.Errorf("commit of photo beside Photo replaced fid %d; want %d", second.ReplacedFid, first.File.Fid)
		}
		for _, k := range []string{"photo", "PHOTO", "Photo", "photo "} {
			f, err := s.FileByKey(ctx, d.ID, k)
			if err != nil || f.Fid != second.File.Fid || f.Key != "photo" {
				t.Errorf("FileByKey(%q) = %+v, %v; want fid %d, key photo", k, f, err, second.File.Fid)
			}
		}
		if _, err := s.File(ctx, first.File.Fid); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("replaced fid %d still has a file row: %v", first.File.Fid, err)
		}
		// A file may take another spelling of its own key; not another's.
		if err := s.RenameFile(ctx, d.ID, "photo", "PHOTO"); err != nil {
			t.Errorf("RenameFile(photo, PHOTO): %v", err)
		}
		commit("other")
		if err := s.RenameFile(ctx, d.ID, "other", "Photo"); !errors.Is(err, store.ErrDuplicate) {
			t.Errorf("RenameFile(other, Photo) beside PHOTO: %v; want %v", err, store.ErrDuplicate)
		}
	})

	t.Run("NonASCIICaseIsBytes", func(t *testing.T) {
		lower, upper := commit("é"), commit("É")
		if upper.ReplacedFid != 0 || lower.File.Fid == upper.File.Fid {
			t.Errorf("é and É: É replaced %d; want two files", upper.ReplacedFid)
		}
	})

	t.Run("ListKeys", func(t *testing.T) {
		got, err := s.ListKeys(ctx, d.ID, "ph", "", 10)
		if want := []string{"PHOTO"}; err != nil || !slices.Equal(got, want) {
			t.Errorf("ListKeys(ph) = %q, %v; want %q (the collation's prefix)", got, err, want)
		}
		got, err = s.ListKeys(ctx, d.ID, "", "", 100)
		want := []string{"PHOTO", "café/日本", "other", "straße", "É", "é"}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ListKeys = %q, %v; want byte order %q", got, err, want)
		}
		// Paging by the last key keeps byte order too.
		got, err = s.ListKeys(ctx, d.ID, "", "other", 2)
		if want := []string{"straße", "É"}; err != nil || !slices.Equal(got, want) {
			t.Errorf("ListKeys after other = %q, %v; want %q", got, err, want)
		}
		const odd = `a_b%c\d!`
		if _, err := perl.ExecContext(ctx, "INSERT INTO file (fid, dmid, dkey, length, classid, devcount) VALUES (900000, ?, ?, 1, 0, 0)", d.ID, odd); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"A_", `A_B%C\`, `a_b%c\d!`} {
			got, err = s.ListKeys(ctx, d.ID, p, "", 10)
			if want := []string{odd}; err != nil || !slices.Equal(got, want) {
				t.Errorf("ListKeys(%q) = %q, %v; want %q (no wildcards)", p, got, err, want)
			}
		}
		if got, err := s.ListKeys(ctx, d.ID, "a%", "", 10); err != nil || len(got) != 0 {
			t.Errorf("ListKeys(a%%) = %q, %v; want none (%% is no wildcard)", got, err)
		}
	})
}

// With DBD::mysql's mysql_enable_utf8=1 the Perl tracker sent characters,
// which the server converted to latin1; so does a Store given that DSN.
func TestOpen_MogdbsetupLatin1EnableUTF8(t *testing.T) {
	dsn, perl := testdb.MogdbsetupLatin1MySQL(t)
	ctx := context.Background()
	s, err := store.Open(ctx, dsn+"?mysql_enable_utf8=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	d, err := s.CreateDomain(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	fid, err := s.CreateTempFile(ctx, store.TempFile{DomainID: d.ID, Key: "ü"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitFile(ctx, store.Commit{Fid: fid, DomainID: d.ID, Key: "ü"}); err != nil {
		t.Fatal(err)
	}
	var h string
	if err := perl.QueryRowContext(ctx, "SELECT HEX(dkey) FROM file WHERE fid = ?", fid).Scan(&h); err != nil || h != "FC" {
		t.Errorf("ü stored as %s, %v; want latin1 FC", h, err)
	}
	if f, err := s.FileByKey(ctx, d.ID, "ü"); err != nil || f.Key != "ü" {
		t.Errorf("FileByKey(ü) = %+v, %v", f, err)
	}
}

func hexUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
