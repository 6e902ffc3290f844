// Package statuslisten is the HTTP status listener both daemons serve for
// operators (the tracker's status_listen, mogstored's statuslisten): the
// Prometheus registry at /metrics, /healthz, /readyz, net/http/pprof under
// /debug/pprof/ and, on the tracker, a page at "/", behind an address
// check. Each daemon supplies what differs: its registry, what "ready"
// means, its network list and its page.
package statuslisten

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gomogile/gomogile/internal/netlist"
)

// NewRegistry is a daemon's own registry (never the global one) with the
// Go runtime and process collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Config is what a daemon's listener serves.
type Config struct {
	Registry *prometheus.Registry
	// Ready answers /readyz: nil is ready (200), an error is 503 with its
	// text. It gets a context bounded by ReadyTimeout.
	Ready        func(ctx context.Context) error
	ReadyTimeout time.Duration
	// Networks, when not empty, are the only peers answered; NetworksKey
	// names the setting in the 403 text.
	Networks    []netip.Prefix
	NetworksKey string
	// Page, when set, is served at "/".
	Page http.HandlerFunc
	// ScrapeTimeout bounds a /metrics request (0 = none).
	ScrapeTimeout time.Duration
}

// Handler is the listener's whole HTTP surface.
func Handler(c Config) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(c.Registry, promhttp.HandlerOpts{
		// A failed read (database down) drops those series, not the rest.
		ErrorHandling: promhttp.ContinueOnError,
		Timeout:       c.ScrapeTimeout,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), c.ReadyTimeout)
		defer cancel()
		if err := c.Ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	if c.Page != nil {
		mux.HandleFunc("GET /{$}", c.Page)
	}
	if len(c.Networks) == 0 {
		return mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ap, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil || !netlist.Allows(c.Networks, ap.Addr().Unmap()) {
			http.Error(w, "access denied ("+c.NetworksKey+")", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// Server is a running listener.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// Listen binds addr and serves h on it until Close; serving errors go to
// log.
func Listen(ctx context.Context, addr string, h http.Handler, log *slog.Logger) (*Server, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("status listener stopped", "err", err)
		}
	}()
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close gives requests in flight up to timeout, cuts the rest and returns
// once the listener has stopped.
func (s *Server) Close(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if s.srv.Shutdown(ctx) != nil {
		s.srv.Close()
	}
	<-s.done
}
