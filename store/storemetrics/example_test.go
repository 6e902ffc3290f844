package storemetrics_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gomogile/gomogile/store"
	_ "github.com/gomogile/gomogile/store/sqlite"
	"github.com/gomogile/gomogile/store/storemetrics"
)

// A tracker's Store, measured: the metrics are the Store's observer, then
// watch the lock mechanism the Store turned out to have.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "storemetrics")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	reg := prometheus.NewRegistry()
	m, err := storemetrics.New(reg)
	if err != nil {
		log.Fatal(err)
	}
	st, err := store.Open(ctx, "sqlite:///"+filepath.Join(dir, "mogilefs.db"), store.WithObserver(m))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if err := m.Watch(st); err != nil {
		log.Fatal(err)
	}

	if _, err := st.CreateDomain(ctx, "photos"); err != nil {
		log.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "gomogile_store_call_seconds" {
			for _, s := range mf.GetMetric() {
				fmt.Println(s.GetLabel()[0].GetValue(), s.GetHistogram().GetSampleCount())
			}
		}
	}
	// Output:
	// CreateDomain 1
}
