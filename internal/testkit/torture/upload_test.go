package torture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
)

// A successful create tells its fid before the call's record, so that a
// SIGKILL between the two writes leaves a create counted as cut off, never
// a tempfile row whose fid no event names beside a create that looks
// finished (a CI run reported that orphan as the store's violation).
func TestUploadTellsTheFidBeforeTheOp(t *testing.T) {
	st, err := store.Open(t.Context(), "sqlite:///"+filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CreateDomain(t.Context(), "d"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	p := &proc{cfg: workerConfig{Keys: 4, Dmids: []int{1}, Devids: []int{1, 2, 3}}, em: &emitter{w: &out}}
	w := &worker{p: p, st: st, name: "p0.0s0", rng: rand.New(rand.NewPCG(1, 2))}
	if err := w.upload(t.Context()); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.K == "op" && ev.Op != "create_temp" {
			break // the upload's later steps
		}
		kinds = append(kinds, ev.K)
	}
	if len(kinds) < 3 || kinds[0] != "cstart" || kinds[1] != "created" || kinds[2] != "op" {
		t.Errorf("events %q; want cstart, created, then the create's op", kinds)
	}
}
