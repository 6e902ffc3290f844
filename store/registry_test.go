package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/store"
)

// recordingDriver is a registry test double: it records the DSN it was asked
// to open and fails, so no database is involved or imitated.
type recordingDriver struct{ got *store.DSN }

var errRecorded = errors.New("recorded")

func (d *recordingDriver) Open(_ context.Context, dsn *store.DSN) (store.Store, error) {
	d.got = dsn
	return nil, errRecorded
}

func TestRegister_OpenDispatchesByScheme(t *testing.T) {
	d := &recordingDriver{}
	store.Register("regtest", d, "regtest-alias")
	if !slices.Contains(store.Drivers(), "regtest-alias") {
		t.Fatalf("Drivers() = %v; want regtest-alias listed", store.Drivers())
	}
	_, err := store.Open(t.Context(), "REGTEST-ALIAS://u:pw@h/db")
	if !errors.Is(err, errRecorded) {
		t.Fatalf("Open error = %v; want the driver's error wrapped", err)
	}
	if strings.Contains(err.Error(), "pw") {
		t.Errorf("Open error %q leaks the password", err)
	}
	if d.got == nil || d.got.Database != "db" || d.got.User != "u" {
		t.Errorf("driver got %+v; want database db, user u", d.got)
	}
}

func TestOpen_UnknownBackendSaysHowToFix(t *testing.T) {
	_, err := store.Open(t.Context(), "nosuchdb://h/db")
	if !errors.Is(err, store.ErrNoDriver) {
		t.Fatalf("error = %v; want ErrNoDriver", err)
	}
	if !strings.Contains(err.Error(), "forgot to import") {
		t.Errorf("error %q does not suggest the missing import", err)
	}
}

func TestRegister_PanicsOnMisuse(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	store.Register("regtest-dup", &recordingDriver{})
	mustPanic("duplicate", func() { store.Register("REGTEST-DUP", &recordingDriver{}) })
	mustPanic("nil driver", func() { store.Register("regtest-nil", nil) })
	mustPanic("empty name", func() { store.Register("", &recordingDriver{}) })
}

func TestCheckLock(t *testing.T) {
	ok := []string{"a", "mgfs:fid:1", strings.Repeat("é", 127) + "x", strings.Repeat("x", 255)}
	for _, n := range ok {
		if err := store.CheckLock(n, 0); err != nil {
			t.Errorf("CheckLock(%d bytes) = %v; want nil", len(n), err)
		}
	}
	bad := []string{"", strings.Repeat("x", 256), "\xff\xfe"}
	for _, n := range bad {
		if err := store.CheckLock(n, 0); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CheckLock(%q) = %v; want ErrInvalid", n, err)
		}
	}
	if err := store.CheckLock("a", -1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("negative timeout: %v; want ErrInvalid", err)
	}
}
