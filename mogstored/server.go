package mogstored

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/gomogile/gomogile/internal/statuslisten"
)

// Server is one storage node: HTTP file server, management port and the
// usage file writer.
type Server struct {
	cfg Config
	log *slog.Logger

	// iostatInterval is the watch sampling period (the original ran
	// "iostat -dx 1"); tests shorten it.
	iostatInterval time.Duration
	iostat         *iostatHub

	mu      sync.Mutex
	opened  bool
	httpLn  net.Listener
	mgmtLn  net.Listener
	httpSrv *http.Server
	conns   map[net.Conn]struct{} // management connections

	metrics *nodeMetrics         // status.go
	status  *statuslisten.Server // nil without statuslisten

	ctx    context.Context // cancelled by Close; stops loops and digests
	cancel context.CancelFunc

	loops    sync.WaitGroup // usage writer, iostat sampler, accept loops, mgmt conns
	handlers sync.WaitGroup // HTTP handlers in flight

	fsckMu     sync.Mutex
	fsckQueues map[string]chan struct{} // one fsck digest at a time per device

	closeOnce sync.Once
	closeErr  error
	done      chan struct{}
}

// New returns a Server for cfg; zero fields other than DocRoot take the
// defaults. Nothing happens until Open.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:            cfg,
		log:            cfg.Logger.With("component", "mogstored"),
		iostatInterval: time.Second,
		conns:          make(map[net.Conn]struct{}),
		fsckQueues:     make(map[string]chan struct{}),
		done:           make(chan struct{}),
	}
	s.metrics = s.newMetrics()
	return s
}

// Config returns the configuration in effect, defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// Open validates the configuration, binds both listeners, writes the usage
// files once and starts serving. ctx bounds the start-up only; the server
// runs until Close (or a "shutdown" on the management port).
func (s *Server) Open(ctx context.Context) (err error) {
	if err := s.cfg.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opened {
		return errors.New("mogstored: server already opened")
	}
	select {
	case <-s.done:
		return errors.New("mogstored: server already closed")
	default:
	}
	fi, err := os.Stat(s.cfg.DocRoot)
	if err != nil {
		return fmt.Errorf("mogstored: docroot: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("mogstored: docroot %s is not a directory", s.cfg.DocRoot)
	}

	var lc net.ListenConfig
	httpLn, err := lc.Listen(ctx, "tcp", s.cfg.HTTPListen)
	if err != nil {
		return fmt.Errorf("mogstored: http listener: %w", err)
	}
	mgmtLn, err := lc.Listen(ctx, "tcp", s.cfg.MgmtListen)
	if err != nil {
		httpLn.Close()
		return fmt.Errorf("mogstored: mgmt listener: %w", err)
	}
	s.httpLn = newLimitListener(httpLn, s.cfg.MaxConns, s.cfg.MaxConnsPerIP, s.log)
	s.mgmtLn = mgmtLn
	if err := s.openStatus(ctx); err != nil {
		httpLn.Close()
		mgmtLn.Close()
		return err
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))

	// The monitor may poll as soon as we answer, so the usage files exist
	// before Open returns. A failure is logged, as the original's child did.
	s.writeUsageFiles()

	if !s.cfg.NoIOStat {
		s.iostat = newIOStatHub(s.cfg.DocRoot, s.iostatInterval, s.log)
	}

	s.httpSrv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 30 * time.Second,
		// Perlbal's persist_client_idle_timeout; frees MaxConns slots held
		// by idle keep-alive clients.
		IdleTimeout: 30 * time.Second,
		ConnState:   s.armBodyRead,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext: func(net.Listener) context.Context { return s.ctx },
	}
	s.opened = true

	s.loops.Add(3)
	go func() {
		defer s.loops.Done()
		if err := s.httpSrv.Serve(s.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "err", err)
		}
	}()
	go func() {
		defer s.loops.Done()
		s.acceptMgmt()
	}()
	go func() {
		defer s.loops.Done()
		s.usageLoop()
	}()
	s.loops.Add(1)
	go func() {
		defer s.loops.Done()
		s.sweepTemps(s.ctx)
	}()
	if s.iostat != nil {
		s.loops.Add(1)
		go func() {
			defer s.loops.Done()
			s.iostat.run(s.ctx)
		}()
	}
	s.log.Info("serving", "http", s.httpLn.Addr().String(), "mgmt", s.mgmtLn.Addr().String(), "docroot", s.cfg.DocRoot)
	return nil
}

// HTTPAddr is the bound HTTP host:port ("" before Open).
func (s *Server) HTTPAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.httpLn == nil {
		return ""
	}
	return s.httpLn.Addr().String()
}

// MgmtAddr is the bound management host:port ("" before Open).
func (s *Server) MgmtAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mgmtLn == nil {
		return ""
	}
	return s.mgmtLn.Addr().String()
}

// Done is closed once the server has shut down, whether through Close or a
// "shutdown" command on the management port.
func (s *Server) Done() <-chan struct{} { return s.done }

// Close stops accepting, gives requests in flight up to ShutdownTimeout to
// finish, then cuts the rest (partial uploads are discarded) and waits for the
// background loops. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.shutdown()
		close(s.done)
	})
	return s.closeErr
}

func (s *Server) shutdown() error {
	s.mu.Lock()
	opened := s.opened
	s.mu.Unlock()
	if !opened {
		return nil
	}
	var errs []error
	if err := s.mgmtLn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		errs = append(errs, fmt.Errorf("mgmt listener: %w", err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if s.status != nil {
		s.status.Close(s.cfg.ShutdownTimeout)
	}
	if err := s.httpSrv.Shutdown(ctx); err != nil {
		s.log.Warn("requests still running after the shutdown timeout; cutting them", "timeout", s.cfg.ShutdownTimeout)
		s.httpSrv.Close()
	}
	// From here on, body reads in cut handlers fail and digests stop.
	s.cancel()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()

	// Handlers clean up their temporary files once their connection is
	// gone; wait for that, but never forever.
	if !waitTimeout(&s.handlers, 5*time.Second) {
		errs = append(errs, errors.New("http handlers did not finish"))
	}
	if !waitTimeout(&s.loops, 5*time.Second) {
		errs = append(errs, errors.New("background loops did not finish"))
	}
	s.log.Info("stopped")
	if len(errs) > 0 {
		return fmt.Errorf("mogstored: close: %w", errors.Join(errs...))
	}
	return nil
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// limitListener holds Accept while max connections are open, so excess
// clients wait in the kernel backlog instead of being refused.
type limitListener struct {
	net.Listener
	perAddr   perAddr
	sem       chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func newLimitListener(l net.Listener, max, maxPerAddr int, log *slog.Logger) *limitListener {
	return &limitListener{Listener: l, sem: make(chan struct{}, max), closed: make(chan struct{}),
		perAddr: perAddr{max: maxPerAddr, log: log}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.sem
			return nil, err
		}
		addr, ok := l.perAddr.acquire(c)
		if !ok {
			continue // refused and closed; the slot stays ours for the next
		}
		return &limitConn{Conn: c, release: func() { l.perAddr.release(addr); <-l.sem }}, nil
	}
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// ReadFrom keeps net/http's sendfile path for GETs: the server looks for
// io.ReaderFrom on the connection, which wrapping would otherwise hide.
func (c *limitConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// CloseWrite lets net/http send its answer and a FIN, and wait a little,
// before it closes a connection whose request body it gave up reading, so
// the client reads the answer before a reset; it looks for the method on
// the connection, which wrapping would otherwise hide.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
