package dbinstance_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gomogile/gomogile/internal/testkit/dbinstance"
)

// Directories a killed owner left are removed by the next process; those
// of a live owner, or with no owner recorded, are not.
func TestSweepStaleDirs(t *testing.T) {
	parent := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, owner int) string {
		d := filepath.Join(parent, name)
		if err := os.MkdirAll(filepath.Join(d, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if owner != 0 {
			os.WriteFile(filepath.Join(d, "gomogile-owner"), []byte(strconv.Itoa(owner)+"\n"), 0o644)
		}
		return d
	}
	stale := mk("gomogile-pg-stale", dead.Process.Pid)
	staleTmpl := mk("gomogile-tmpl-stale", dead.Process.Pid)
	live := mk("gomogile-my-live", os.Getppid())
	unknown := mk("gomogile-bouncer-unknown", 0)
	other := mk("someone-else", dead.Process.Pid)

	d, err := dbinstance.TempDir(parent, "gomogile-pg-*")
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{stale, staleTmpl} {
		if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s of a dead owner not removed: %v", gone, err)
		}
	}
	for _, kept := range []string{live, unknown, other, d} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s removed: %v", kept, err)
		}
	}
}
