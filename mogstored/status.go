package mogstored

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gomogile/gomogile/internal/statuslisten"
)

// The status listener (statuslisten) is the node's HTTP side for
// operators: Prometheus metrics at /metrics (bytes in and out, requests,
// device usage), /healthz (the process answers), /readyz (the docroot and
// every device directory are readable) and net/http/pprof under
// /debug/pprof/. Like the management port's "shutdown" it answers only
// inside mgmtnetworks when that is set.

// nodeMetrics are one Server's metrics, in a registry of its own.
type nodeMetrics struct {
	reg      *prometheus.Registry
	bytesIn  prometheus.Counter
	bytesOut prometheus.Counter
	requests *prometheus.CounterVec
}

func (s *Server) newMetrics() *nodeMetrics {
	m := &nodeMetrics{
		reg: statuslisten.NewRegistry(),
		bytesIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gomogile_storage_bytes_in_total", Help: "Request body bytes read (PUT uploads).",
		}),
		bytesOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gomogile_storage_bytes_out_total", Help: "Response body bytes written (GET downloads).",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gomogile_storage_requests_total", Help: "HTTP requests answered, by method and status code.",
		}, []string{"method", "code"}),
	}
	m.reg.MustRegister(m.bytesIn, m.bytesOut, m.requests, usageCollector{s})
	return m
}

// Registry is the registry the status listener serves; it holds the node's
// metrics whether or not statuslisten is set.
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

var (
	descDevKBTotal = prometheus.NewDesc("gomogile_storage_device_kb_total", "Device size in KiB (used + available), as in the usage file.", []string{"dev"}, nil)
	descDevKBUsed  = prometheus.NewDesc("gomogile_storage_device_kb_used", "Device usage in KiB, as in the usage file.", []string{"dev"}, nil)
)

// usageCollector measures every device when scraped, as the usage files do.
type usageCollector struct{ s *Server }

func (c usageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descDevKBTotal
	ch <- descDevKBUsed
}

func (c usageCollector) Collect(ch chan<- prometheus.Metric) {
	devs, err := deviceDirs(c.s.cfg.DocRoot)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descDevKBTotal, err)
		return
	}
	now := time.Now()
	for _, dev := range devs {
		u, err := measureUsage(c.s.cfg.DocRoot, dev, now)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(descDevKBTotal, err)
			continue
		}
		ch <- prometheus.MustNewConstMetric(descDevKBTotal, prometheus.GaugeValue, float64(u.Total), dev)
		ch <- prometheus.MustNewConstMetric(descDevKBUsed, prometheus.GaugeValue, float64(u.Used), dev)
	}
}

// measure counts a request's body, its response's body and its outcome;
// call done when the handler returns.
func (m *nodeMetrics) measure(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request, func()) {
	mw := &meteredWriter{ResponseWriter: w}
	if r.Body != nil && r.Body != http.NoBody {
		// On a copy of the request: net/http decides how to end a body
		// the handler left unread (give up at once on a large one and
		// half-close, or not reuse after a 100-continue never sent) by
		// the type of the Body in the Request it passed us.
		r = r.WithContext(r.Context())
		r.Body = &meteredBody{ReadCloser: r.Body, n: &mw.in}
	}
	return mw, r, func() {
		code := mw.code
		if code == 0 {
			code = http.StatusOK
		}
		m.bytesIn.Add(float64(mw.in.Load()))
		m.bytesOut.Add(float64(mw.out))
		m.requests.WithLabelValues(methodLabel(r.Method), strconv.Itoa(code)).Inc()
	}
}

// methodLabel bounds the method label to the methods the node serves.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, "MKCOL":
		return m
	}
	return "other"
}

type meteredBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *meteredBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// meteredWriter counts what a handler writes. It keeps the underlying
// writer's ReadFrom (sendfile for GETs) and lets http.ResponseController
// reach it through Unwrap.
type meteredWriter struct {
	http.ResponseWriter
	code int
	out  int64
	in   atomic.Int64
}

func (w *meteredWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *meteredWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.out += int64(n)
	return n, err
}

func (w *meteredWriter) ReadFrom(r io.Reader) (int64, error) {
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		n, err = io.Copy(struct{ io.Writer }{w.ResponseWriter}, r)
	}
	w.out += n
	return n, err
}

func (w *meteredWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// openStatus listens on statuslisten, if set. Called by Open.
func (s *Server) openStatus(ctx context.Context) error {
	if s.cfg.StatusListen == "" {
		return nil
	}
	h := statuslisten.Handler(statuslisten.Config{
		Registry: s.metrics.reg, Ready: s.ready, ReadyTimeout: readyTimeout,
		Networks: s.cfg.MgmtNetworks, NetworksKey: "mgmtnetworks",
	})
	srv, err := statuslisten.Listen(ctx, s.cfg.StatusListen, h, s.log)
	if err != nil {
		return fmt.Errorf("mogstored: status listener: %w", err)
	}
	s.status = srv
	return nil
}

// StatusAddr is the bound status listener host:port ("" when none).
func (s *Server) StatusAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status == nil {
		return ""
	}
	return s.status.Addr().String()
}

// readyTimeout bounds /readyz's look at the device directories.
const readyTimeout = 5 * time.Second

// ready is /readyz: the docroot lists and every device directory in it
// can be read. A hung disk blocks it past ctx; the scrape gives up then.
func (s *Server) ready(ctx context.Context) error {
	devs, err := deviceDirs(s.cfg.DocRoot)
	if err != nil {
		return fmt.Errorf("docroot: %w", err)
	}
	for _, dev := range devs {
		f, err := os.Open(filepath.Join(s.cfg.DocRoot, dev))
		if err == nil {
			_, err = f.Readdirnames(1)
			f.Close()
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: %w", dev, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}
