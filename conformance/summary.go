package conformance

import (
	"fmt"
	"os"
	"sync"
)

// SummaryEnv names the environment variable that sends the suite's summary
// lines to a file as well as to standard output. `go test ./...` (package
// list mode) shows a passing package's output only with -v, so without it
// the line Run prints never reaches the user; with
//
//	GOMOGILE_TEST_SUMMARY=/dev/tty go test ./...
//
// each line shows on the terminal as its package finishes, and with a
// file's path a CI job can print the file after the run. Lines are
// appended, one write each, so the test binaries go test runs side by side
// do not interleave within a line.
const SummaryEnv = "GOMOGILE_TEST_SUMMARY"

var summaryMu sync.Mutex

// WriteSummary appends line (and a newline) to the file $GOMOGILE_TEST_SUMMARY
// names, if it names one. Run calls it with its summary line; a harness
// that cannot run its backend calls it to say so (so a skipped backend is
// as visible as one that ran). A file that cannot be written is reported
// on standard error and otherwise ignored: it must not fail a test run.
func WriteSummary(line string) {
	path := os.Getenv(SummaryEnv)
	if path == "" {
		return
	}
	summaryMu.Lock()
	defer summaryMu.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.Write([]byte(line + "\n"))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gomogile conformance: cannot write the summary to $%s: %v\n", SummaryEnv, err)
	}
}
