package tracker_test

import (
	"testing"

	"github.com/gomogile/gomogile/store"
)

// case_sensitive_list_keys off is stored as 2.73 stores it (0) and makes
// list_keys match its prefix case-insensitively (ASCII letters), on every
// backend; keys list in byte order and after still applies. Unset or on,
// prefixes compare byte for byte.
func TestListKeys_CaseInsensitiveSetting(t *testing.T) {
	eachBackend(t, func(t *testing.T, dsn string) {
		st := openStore(t, dsn)
		ctx := t.Context()
		dom, err := st.CreateDomain(ctx, "d")
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"Photo/1", "photo/2", "PHOTO/3", "pHoto-x", "phone", "Zebra", "phot"} {
			fid, err := st.CreateTempFile(ctx, store.TempFile{DomainID: dom.ID, Key: key})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.CommitFile(ctx, store.Commit{Fid: fid, DomainID: dom.ID, Key: key}); err != nil {
				t.Fatal(err)
			}
		}
		tt := startTracker(t, testConfig(), st, nil)
		c := tt.dial()
		c.want("list_keys domain=d&prefix=photo", "OK key_count=1&next_after=photo/2&key_1=photo/2")

		c.want("set_server_setting key=case_sensitive_list_keys&value=off", "OK ")
		if v, err := st.ServerSetting(ctx, "case_sensitive_list_keys"); err != nil || v != "0" {
			t.Errorf("case_sensitive_list_keys stored as %q, %v; want 0", v, err)
		}
		c.want("list_keys domain=d&prefix=photo",
			"OK key_count=4&next_after=photo/2&key_1=PHOTO/3&key_2=Photo/1&key_3=pHoto-x&key_4=photo/2")
		c.want("list_keys domain=d&prefix=PhOtO%2F&limit=2",
			"OK key_count=2&next_after=Photo/1&key_1=PHOTO/3&key_2=Photo/1")
		c.want("list_keys domain=d&prefix=photo&after=Photo%2F1",
			"OK key_count=2&next_after=photo/2&key_1=pHoto-x&key_2=photo/2")
		c.want("list_keys domain=d&prefix=PHON", "OK key_count=1&next_after=phone&key_1=phone")
		c.want("list_keys domain=d&prefix=x", "ERR none_match No+keys+match+that+pattern+and+after-value+%28if+any%29.")
		c.want("list_keys domain=d", "OK key_count=7&next_after=photo/2&key_1=PHOTO/3&key_2=Photo/1&key_3=Zebra&key_4=pHoto-x&key_5=phone&key_6=phot&key_7=photo/2")

		c.want("set_server_setting key=case_sensitive_list_keys&value=1", "OK ")
		c.want("list_keys domain=d&prefix=photo", "OK key_count=1&next_after=photo/2&key_1=photo/2")
	})
}
