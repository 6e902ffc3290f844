package testkit_test

import (
	"os/exec"
	"strings"
	"testing"
)

const (
	module  = "github.com/gomogile/gomogile"
	testkit = module + "/internal/testkit"
)

// testPrograms are the commands built on the test tooling.
var testPrograms = map[string]bool{
	module + "/cmd/gomogile-bench":   true,
	module + "/cmd/gomogile-torture": true,
}

// No production package — the daemons, their helpers, the libraries —
// imports the test tooling, directly or through another package (test
// files do not count: go list's Deps leaves them out).
func TestProductionImportsNoTestkit(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the import graph with")
	}
	out, err := exec.Command(goTool, "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		if pkg == testkit || strings.HasPrefix(pkg, testkit+"/") || testPrograms[pkg] {
			continue
		}
		checked++
		for _, d := range strings.Fields(deps) {
			if strings.HasPrefix(d, testkit+"/") {
				t.Errorf("%s imports the test tooling %s", pkg, d)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d production packages listed; the check saw too little:\n%s", checked, out)
	}
}
