package tracker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gomogile/gomogile/client"
	"github.com/gomogile/gomogile/store"
)

// chromiumPath finds Debian's Chromium (scripts/test-servers.sh installs
// it). Under CI a missing browser fails the test; elsewhere it is skipped,
// loudly.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	msg := "NO CHROMIUM FOUND: the status page's browser test DID NOT RUN; install it with scripts/test-servers.sh (apt-get install chromium)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	fmt.Fprintln(os.Stderr, "WARNING:", msg)
	t.Skip(msg)
	return ""
}

// pageDevice is what the page shows of one device.
type pageDevice struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	Observed string `json:"observed"`
	Weight   int64  `json:"weight"`
	Used     int64  `json:"used"`
	Total    int64  `json:"total"`
	Pct      string `json:"pct"`
}

type pageView struct {
	Devices  []pageDevice     `json:"devices"`
	Queues   map[string]int64 `json:"queues"`
	Backend  string           `json:"backend"`
	LockMech string           `json:"lockmech"`
	Refresh  string           `json:"refresh"`
	Files    int64            `json:"files"`
	TooFew   int64            `json:"toofew"`
}

const readPageJS = `(() => {
  const num = (tr, sel) => parseInt(tr.querySelector(sel).textContent, 10);
  const devices = [...document.querySelectorAll('#devices tr[data-devid]')].map(tr => ({
    id: parseInt(tr.dataset.devid, 10),
    state: tr.querySelector('.state').textContent.trim(),
    observed: tr.querySelector('.observed').textContent.trim(),
    weight: num(tr, '.weight'), used: num(tr, '.used'), total: num(tr, '.total'),
    pct: tr.querySelector('.pct').textContent.trim(),
  }));
  const queues = {};
  for (const tr of document.querySelectorAll('#queues tr[data-queue]')) {
    queues[tr.dataset.queue] = num(tr, '.depth');
  }
  const meta = document.querySelector('meta[http-equiv="refresh"]');
  return { devices, queues,
    backend: document.getElementById('backend').textContent,
    lockmech: document.getElementById('lockmech').textContent,
    refresh: meta ? meta.content : '',
    files: parseInt(document.getElementById('nfiles').textContent, 10),
    toofew: parseInt(document.getElementById('ntoofew').textContent, 10) };
})()`

// TestStatus_PageInBrowser loads the status page of a running tracker with
// storage nodes in headless Chromium and checks that the devices, their
// usage, the queue depths and the file count it shows are the database's,
// then writes a screenshot to var/status-page.png.
func TestStatus_PageInBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	c := startStatusCluster(t, testDSN(t), testConfig(), 2)
	ctx := t.Context()
	if _, err := c.cl.StoreFile(ctx, "", "page/1", "two", strings.NewReader("shown on the page"), 17); err != nil {
		t.Fatal(err)
	}
	// Parked rows stay put whatever the workers do, so the page and the
	// database must agree on them exactly.
	for fid := int64(900001); fid <= 900003; fid++ {
		if err := c.st.Enqueue(ctx, store.QueueFsck, store.QueueEntry{Fid: fid, After: store.Never}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.st.SetDeviceWeight(ctx, 2, 40); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "replication done and usage in the device rows", func() bool {
		n, err := c.st.QueueLength(ctx, store.QueueReplicate)
		if err != nil || n != 0 {
			return false
		}
		devs, err := c.st.Devices(ctx)
		if err != nil {
			return false
		}
		for _, d := range devs {
			if d.MBTotal == 0 {
				return false
			}
		}
		return true
	})

	actx, cancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1100, 900))...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 60*time.Second)
	defer cancel()

	before, err := c.st.Devices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx,
		chromedp.Navigate(c.base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#devices")),
	); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	view, err := chromedp.Run(bctx, chromedp.Evaluate[pageView](readPageJS))
	if err != nil {
		t.Fatalf("reading the page: %v", err)
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	after, err := c.st.Devices(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if len(view.Devices) != len(before) {
		t.Fatalf("page shows %d devices; the database has %d", len(view.Devices), len(before))
	}
	for i, pd := range view.Devices {
		b, a := before[i], after[i]
		if pd.ID != b.ID || pd.State != string(b.Status) || pd.Weight != int64(b.Weight) {
			t.Errorf("page device %+v; database %+v", pd, b)
		}
		if pd.Observed != "writeable" {
			t.Errorf("dev%d observed %q on the page; want writeable", pd.ID, pd.Observed)
		}
		// Usage may move between the two reads (the monitor keeps writing
		// it): the page must show a value from that window.
		in := func(v, x, y int64) bool { return v >= min(x, y) && v <= max(x, y) }
		if !in(pd.Used, b.MBUsed, a.MBUsed) || !in(pd.Total, b.MBTotal, a.MBTotal) {
			t.Errorf("dev%d usage on the page %d/%d MiB; database %d/%d then %d/%d", pd.ID, pd.Used, pd.Total,
				b.MBUsed, b.MBTotal, a.MBUsed, a.MBTotal)
		}
		if want := fmt.Sprintf("%d%%", pd.Used*100/max(pd.Total, 1)); pd.Pct != want {
			t.Errorf("dev%d usage bar says %s; %d of %d MiB is %s", pd.ID, pd.Pct, pd.Used, pd.Total, want)
		}
	}
	if view.Devices[1].Weight != 40 {
		t.Errorf("dev2 weight on the page %d; want 40", view.Devices[1].Weight)
	}
	for _, q := range []store.Queue{store.QueueReplicate, store.QueueDelete, store.QueueFsck, store.QueueRebalance} {
		n, err := c.st.QueueLength(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := view.Queues[q.String()]
		if !ok || got != n {
			t.Errorf("queue %s on the page: %d (shown %v); database %d", q, got, ok, n)
		}
	}
	if view.Queues["fsck"] != 3 {
		t.Errorf("fsck queue on the page %d; want the 3 parked rows", view.Queues["fsck"])
	}
	info, err := c.st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if view.Backend != info.Driver || view.LockMech != c.st.Capabilities().LockMechanism {
		t.Errorf("page names backend %q with %q locks; want %q with %q", view.Backend, view.LockMech,
			info.Driver, c.st.Capabilities().LockMechanism)
	}
	if view.Files != 1 || view.TooFew != 0 {
		t.Errorf("page counts %d files, %d short of copies; want the 1 file, replicated", view.Files, view.TooFew)
	}
	if view.Refresh == "" {
		t.Errorf("the page does not refresh itself")
	}

	banner, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.getElementById('banner') !== null`))
	if err != nil {
		t.Fatal(err)
	}
	if banner {
		t.Errorf("the page shows a banner with every node up")
	}

	// A storage node nothing answers for: the banner names its host and
	// device, and the monitor's warning is under "Recent warnings".
	var port int
	fmt.Sscan(closedPort(t, "127.0.0.4"), &port)
	if _, err := c.cl.CreateHost(ctx, client.Host{Name: "gone", IP: "127.0.0.4", Port: port, Status: "alive"}); err != nil {
		t.Fatal(err)
	}
	if err := c.cl.CreateDevice(ctx, client.NewDevice{HostName: "gone", DevID: 9}); err != nil {
		t.Fatal(err)
	}
	wantBanner := fmt.Sprintf("Host gone (127.0.0.4:%d) unreachable: dev9", port)
	waitFor(t, 20*time.Second, "the unreachable host on the page", func() bool {
		_, body := c.get(t, "/")
		return strings.Contains(body, wantBanner) && strings.Contains(body, "not listening on 127.0.0.4")
	})
	type alertView struct {
		Banner   string `json:"banner"`
		Warnings string `json:"warnings"`
	}
	if err := chromedp.Do(bctx,
		chromedp.Navigate(c.base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#banner")),
	); err != nil {
		t.Fatalf("chromium, with a node down: %v", err)
	}
	alert, err := chromedp.Run(bctx, chromedp.Evaluate[alertView](`({banner: document.getElementById('banner').innerText, warnings: document.getElementById('warnings').innerText})`))
	if err != nil {
		t.Fatalf("reading the banner: %v", err)
	}
	if strings.TrimSpace(alert.Banner) != wantBanner {
		t.Errorf("banner %q; want %q", alert.Banner, wantBanner)
	}
	if !strings.Contains(alert.Warnings, "not listening on 127.0.0.4") {
		t.Errorf("recent warnings %q lack the monitor's line for the down node", alert.Warnings)
	}
	if png2, err := chromedp.Run(bctx, chromedp.FullScreenshot(100)); err == nil {
		png = png2 // the screenshot kept shows the banner
	}

	dir := filepath.Join("..", "var")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "status-page.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
}
