package tracker_test

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// Point 6 of issue 9, with point 4's follow-up: a class switched to SHA-1
// by update_class + clear_cache has its very next upload replicated with a
// SHA-1 checksum; fsck digests with the class's algorithm, logs BALG for a
// file whose stored checksum is of another algorithm, and replaces a copy
// whose SHA-1 does not match.
func TestChecksum_SHA1Class(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		e := startE2E(t, dsn, 1, 3, nil)
		c := e.trackers[0].dial()
		st := openStore(t, dsn)
		ctx := t.Context()
		checksum := func(fid int64) (store.Checksum, bool) {
			sum, err := st.Checksum(ctx, fid)
			if errors.Is(err, store.ErrNotFound) {
				return sum, false
			}
			if err != nil {
				t.Fatal(err)
			}
			return sum, true
		}
		upload := func(key, class string, body []byte) int64 {
			t.Helper()
			if _, err := e.cl.StoreFile(ctx, "", key, class, bytes.NewReader(body), int64(len(body))); err != nil {
				t.Fatal(err)
			}
			fi, err := e.cl.FileInfo(ctx, "", key)
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, 20*time.Second, key+" replicated", func() bool { return len(e.blobs(fi.FID)) == 2 })
			return fi.FID
		}

		// md5 gets an MD5 checksum by replication, then turns SHA-1.
		parseOK(t, c.do("create_class domain=e2e&class=md5&mindevcount=2&hashtype=MD5"))
		mixedBody := []byte("hashed with MD5 first")
		mixed := upload("mixed", "md5", mixedBody)
		waitFor(t, 10*time.Second, "MD5 checksum of the first file", func() bool { _, ok := checksum(mixed); return ok })

		parseOK(t, c.do("create_class domain=e2e&class=sha&mindevcount=2"))
		parseOK(t, c.do("update_class domain=e2e&class=sha&mindevcount=2&hashtype=SHA-1"))
		parseOK(t, c.do("update_class domain=e2e&class=md5&mindevcount=2&hashtype=SHA-1"))
		c.want("clear_cache", "OK ")
		shaBody := []byte("hashed with SHA-1")
		sha := upload("sha", "sha", shaBody)
		waitFor(t, 10*time.Second, "SHA-1 checksum", func() bool { _, ok := checksum(sha); return ok })
		want := sha1.Sum(shaBody)
		if got, _ := checksum(sha); got.HashType != store.HashSHA1 || !bytes.Equal(got.Sum, want[:]) {
			t.Fatalf("checksum of the SHA-1 class's file = %v:%x; want SHA-1:%x", got.HashType, got.Sum, want)
		}
		r := parseOK(t, c.do("file_info domain=e2e&key=sha"))
		if got := r.Get("checksum"); got != fmt.Sprintf("SHA-1:%x", want) {
			t.Errorf("file_info checksum = %q; want SHA-1:%x", got, want)
		}
		r = parseOK(t, c.do("get_domains"))
		for i := 1; r.Get(fmt.Sprintf("domain1class%dname", i)) != ""; i++ {
			if n := r.Get(fmt.Sprintf("domain1class%dname", i)); n == "sha" || n == "md5" {
				if h := r.Get(fmt.Sprintf("domain1class%dhashtype", i)); h != "SHA-1" {
					t.Errorf("get_domains: class %s hashtype %q; want SHA-1", n, h)
				}
			}
		}
		if old, _ := checksum(mixed); old.HashType != store.HashMD5 {
			t.Fatalf("first file's checksum type %v; want MD5", old.HashType)
		}

		// One copy of sha corrupted, same length: only its SHA-1 tells.
		on := e.blobs(sha)
		bad := on[0]
		corrupt := bytes.ToUpper(shaBody)
		if err := os.WriteFile(e.nodes[bad-1].blobPath(bad, sha), corrupt, 0o644); err != nil {
			t.Fatal(err)
		}
		c.want("fsck_start", "OK ")
		waitFor(t, 30*time.Second, "fsck to finish", func() bool {
			_, err := st.ServerSetting(ctx, "fsck_host")
			n, qerr := st.QueueLength(ctx, store.QueueFsck)
			return errors.Is(err, store.ErrNotFound) && qerr == nil && n == 0
		})
		evs, err := st.FsckEvents(ctx, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		codes := map[int64][]string{}
		for _, ev := range evs {
			codes[ev.Fid] = append(codes[ev.Fid], ev.Code)
		}
		if got := codes[mixed]; !slices.Equal(got, []string{"BALG"}) {
			t.Errorf("fsck events of the MD5-summed file in a SHA-1 class: %v; want [BALG]", got)
		}
		if got := codes[sha]; !slices.Equal(got, []string{"REPL"}) {
			t.Errorf("fsck events of the file with a corrupt copy: %v; want [REPL]", got)
		}
		// The corrupt copy is forgotten and rebuilt from the good one.
		waitFor(t, 20*time.Second, "corrupt copy replaced", func() bool {
			fi, err := e.cl.FileInfo(ctx, "", "sha")
			if err != nil || fi.DevCount != 2 {
				return false
			}
			n := 0
			for _, d := range e.blobs(sha) {
				if b, err := os.ReadFile(e.nodes[d-1].blobPath(d, sha)); err == nil && bytes.Equal(b, shaBody) {
					n++
				}
			}
			return n == 2
		})
		// fsck left the MD5 checksum alone: BALG is for an operator.
		if old, _ := checksum(mixed); old.HashType != store.HashMD5 || !bytes.Equal(old.Sum, md5sum(mixedBody)) {
			t.Errorf("first file's checksum = %v:%x; want its MD5 kept", old.HashType, old.Sum)
		}
	})
}

func md5sum(b []byte) []byte { s := md5.Sum(b); return s[:] }
