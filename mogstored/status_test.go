package mogstored

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestStatus_MetricsCountBytesAndUsage(t *testing.T) {
	s, _ := startServer(t, func(c *Config) { c.StatusListen = "127.0.0.1:0" })
	base := "http://" + s.HTTPAddr()
	body := strings.Repeat("x", 10000)
	if res, _ := do(t, http.MethodPut, base+"/dev1/0/000/000/0000000001.fid", strings.NewReader(body), nil); res.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %d", res.StatusCode)
	}
	if res, got := do(t, http.MethodGet, base+"/dev1/0/000/000/0000000001.fid", nil, nil); res.StatusCode != http.StatusOK || got != body {
		t.Fatalf("GET: %d, %d bytes", res.StatusCode, len(got))
	}
	status := "http://" + s.StatusAddr()
	wants := []string{
		"gomogile_storage_bytes_in_total 10000",
		"gomogile_storage_bytes_out_total 10000",
		`gomogile_storage_requests_total{code="200",method="PUT"} 1`,
		`gomogile_storage_requests_total{code="200",method="GET"} 1`,
		`gomogile_storage_device_kb_total{dev="dev1"}`,
		`gomogile_storage_device_kb_used{dev="dev2"}`,
	}
	var text string
	// A request is counted as its handler returns, which may be just after
	// the client has the whole response.
	waitFor(t, "the requests in /metrics", func() bool {
		var res *http.Response
		res, text = do(t, http.MethodGet, status+"/metrics", nil, nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics: %d", res.StatusCode)
		}
		for _, want := range wants {
			if !strings.Contains(text, want) {
				return false
			}
		}
		return true
	})
	if n, err := testutil.GatherAndCount(s.Registry(), "gomogile_storage_device_kb_total"); err != nil || n != 2 {
		t.Errorf("device size series: %d, %v; want 2", n, err)
	}
}

func TestStatus_HealthReadyPprof(t *testing.T) {
	s, docroot := startServer(t, func(c *Config) { c.StatusListen = "127.0.0.1:0" })
	status := "http://" + s.StatusAddr()
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/debug/pprof/": 200, "/nope": 404} {
		if res, _ := do(t, http.MethodGet, status+path, nil, nil); res.StatusCode != want {
			t.Errorf("GET %s: %d; want %d", path, res.StatusCode, want)
		}
	}
	// A docroot gone (an unmounted disk) is not ready; back, it is.
	moved := docroot + ".away"
	if err := os.Rename(docroot, moved); err != nil {
		t.Fatal(err)
	}
	res, text := do(t, http.MethodGet, status+"/readyz", nil, nil)
	if err := os.Rename(moved, docroot); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(text, "docroot") {
		t.Errorf("readyz without a docroot: %d %q; want 503 naming the docroot", res.StatusCode, text)
	}
	if res, _ := do(t, http.MethodGet, status+"/healthz", nil, nil); res.StatusCode != http.StatusOK {
		t.Errorf("healthz: %d", res.StatusCode)
	}
	if res, _ := do(t, http.MethodGet, status+"/readyz", nil, nil); res.StatusCode != http.StatusOK {
		t.Errorf("readyz with the docroot back: %d", res.StatusCode)
	}
}

func TestStatus_MgmtNetworksGuardStatus(t *testing.T) {
	s, _ := startServer(t, func(c *Config) {
		c.StatusListen = "127.0.0.1:0"
		nets, err := ParseNetworks("192.0.2.0/24")
		if err != nil {
			t.Fatal(err)
		}
		c.MgmtNetworks = nets
	})
	if res, _ := do(t, http.MethodGet, "http://"+s.StatusAddr()+"/metrics", nil, nil); res.StatusCode != http.StatusForbidden {
		t.Errorf("GET /metrics from outside mgmtnetworks: %d; want 403", res.StatusCode)
	}
}

func TestStatus_ListenSetting(t *testing.T) {
	cfg, err := ParseConfig(strings.NewReader("statuslisten = 127.0.0.1:7580\n"))
	if err != nil || cfg.StatusListen != "127.0.0.1:7580" {
		t.Fatalf("statuslisten line: %q, %v", cfg.StatusListen, err)
	}
	if DefaultConfig().StatusListen != "" {
		t.Errorf("statuslisten is on by default")
	}
	if _, err := ParseConfig(strings.NewReader("statuslisten = 127.0.0.1:99999\n")); err == nil || !strings.Contains(err.Error(), "statuslisten") {
		t.Errorf("bad statuslisten: got %v; want an error naming it", err)
	}
	m := &Main{Stdout: new(strings.Builder), Stderr: new(strings.Builder)}
	if err := m.ParseFlags([]string{"-s", "--statuslisten=127.0.0.1:7581"}); err != nil || m.Config.StatusListen != "127.0.0.1:7581" {
		t.Errorf("--statuslisten: %q, %v", m.Config.StatusListen, err)
	}
}
