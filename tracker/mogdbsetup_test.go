package tracker_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/testdb"
	"github.com/gomogile/gomogile/tracker"
	model "github.com/gomogile/gomogile/tracker/internal/cluster"
)

// A tracker on a MySQL database made by MogileFS 2.73's mogdbsetup on a
// latin1 server answers as the original did there (store/mysql's
// TestOpen_MogdbsetupLatin1 pins the details): keys differing only in case
// are one key, so a second upload replaces the first instead of failing
// after 64 commit rounds, and a UTF-8 key the Perl tracker wrote as raw
// bytes is found and listed as those bytes.
func TestMogdbsetupLatin1_UploadGetPathsListKeys(t *testing.T) {
	dsn, perl := testdb.MogdbsetupLatin1MySQL(t)
	_, c, n := oneNodeCluster(t, openStore(t, dsn))

	upload := func(key string, body []byte) string {
		t.Helper()
		r := parseOK(t, c.do("create_open domain=d&class=c&key="+esc(key)))
		put(t, r.Get("path"), body)
		c.want(fmt.Sprintf("create_close domain=d&key=%s&fid=%s&devid=%s&size=%d&path=%s", esc(key), r.Get("fid"), r.Get("devid"), len(body), esc(r.Get("path"))), "OK ")
		return r.Get("fid")
	}
	upload("Photo", []byte("one"))
	fid := upload("photo", []byte("two"))
	// As the original, file_info echoes the key asked for.
	c.want("file_info domain=d&key=PHOTO", "OK fid="+fid+"&domain=d&class=c&key=PHOTO&length=3&devcount=1")
	p := parseOK(t, c.do("get_paths domain=d&key=PHOTO&noverify=1"))
	if got := fetch(t, p.Get("path1")); string(got) != "two" {
		t.Errorf("get_paths PHOTO serves %q; want the second upload's %q", got, "two")
	}
	c.want("list_keys domain=d&prefix=PH", "OK key_count=1&next_after=photo&key_1=photo")

	// The Perl tracker's file: row and placement written by its session,
	// blob on the node.
	const key = "café/日本"
	body := []byte("from perl")
	if _, err := perl.ExecContext(t.Context(), "INSERT INTO file (fid, dmid, dkey, length, classid, devcount) VALUES (500, 1, ?, ?, 0, 1)", key, len(body)); err != nil {
		t.Fatal(err)
	}
	if _, err := perl.ExecContext(t.Context(), "INSERT INTO file_on (fid, devid) VALUES (500, 1)"); err != nil {
		t.Fatal(err)
	}
	put(t, "http://"+n.srv.HTTPAddr()+model.FidPath(1, 500), body)
	p = parseOK(t, c.do("get_paths domain=d&noverify=1&key="+esc(key)))
	if got := fetch(t, p.Get("path1")); !bytes.Equal(got, body) {
		t.Errorf("get_paths %q serves %q; want %q", key, got, body)
	}
	c.want("list_keys domain=d&prefix=caf", "OK key_count=1&next_after="+tracker.Escape(key)+"&key_1="+tracker.Escape(key))
}
