package conformance

import (
	"os"
	"path/filepath"
	"testing"
)

// Lines go to the file $GOMOGILE_TEST_SUMMARY names, appended whole;
// with it unset nothing is written anywhere.
func TestWriteSummary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.txt")
	t.Setenv(SummaryEnv, "")
	WriteSummary("not written")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a file appeared with %s unset: %v", SummaryEnv, err)
	}
	t.Setenv(SummaryEnv, path)
	WriteSummary("conformance: backend=a")
	WriteSummary("conformance: backend=b")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "conformance: backend=a\nconformance: backend=b\n"; got != want {
		t.Errorf("summary file %q; want %q", got, want)
	}
	// A path that cannot be written costs a line on stderr, not the run.
	t.Setenv(SummaryEnv, filepath.Join(path, "not-a-dir", "x"))
	WriteSummary("lost")
}
