package client_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// peer is a tracker on a real TCP socket that speaks the line protocol as
// mogilefsd's client connection and Query.pm do: it reads CRLF-terminated
// request lines, splits "cmd args" with Query.pm's /^(\w+)\s*(.*)/,
// decodes the arguments with the standard library (independently of the
// client's own decoder) and answers with whatever line the test's handler
// gives. It keeps what it received so tests can check the exact bytes.
type peer struct {
	t      *testing.T
	ln     net.Listener
	handle func(req request) answer

	mu      sync.Mutex
	reqs    []request
	accepts int
	closed  int // connections the peer has closed
	conns   []net.Conn

	done chan struct{}
	wg   sync.WaitGroup
}

type request struct {
	Raw  string // the whole line, CRLF included
	Cmd  string
	Args url.Values
}

type answer struct {
	Line  string // written with CRLF appended, unless empty
	Hang  bool   // never answer (until the test ends)
	Close bool   // close the connection after Line (or instead of it)
}

var cmdLine = regexp.MustCompile(`^(\w+)\s*(.*)$`)

func startPeer(t *testing.T, handle func(request) answer) *peer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{t: t, ln: ln, handle: handle, done: make(chan struct{})}
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(func() {
		close(p.done)
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *peer) Addr() string { return p.ln.Addr().String() }

func (p *peer) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.accepts++
		p.conns = append(p.conns, c)
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *peer) serve(c net.Conn) {
	defer p.wg.Done()
	defer func() {
		c.Close()
		p.mu.Lock()
		p.closed++
		p.mu.Unlock()
	}()
	br := bufio.NewReader(c)
	for {
		raw, err := br.ReadString('\n')
		if err != nil {
			return
		}
		req := request{Raw: raw}
		body := strings.TrimRight(raw, "\r\n")
		if m := cmdLine.FindStringSubmatch(body); m != nil {
			req.Cmd = strings.ToLower(m[1])
			req.Args = decodeLikePerl(p.t, m[2])
		}
		p.mu.Lock()
		p.reqs = append(p.reqs, req)
		p.mu.Unlock()

		a := p.handle(req)
		if a.Hang {
			<-p.done
			return
		}
		if a.Line != "" {
			if _, err := io.WriteString(c, a.Line+"\r\n"); err != nil {
				return
			}
		}
		if a.Close {
			return
		}
	}
}

// decodeLikePerl splits as decode_url_args does (pairs on '&', empty
// pairs skipped, name and value on '='), unescaping with net/url.
func decodeLikePerl(t *testing.T, s string) url.Values {
	v := url.Values{}
	for _, pair := range strings.Split(s, "&") {
		if pair == "" {
			continue
		}
		k, val, _ := strings.Cut(pair, "=")
		if strings.Contains(val, "=") {
			t.Errorf("peer: raw '=' in value %q would be cut by the tracker", pair)
		}
		dk, err1 := url.QueryUnescape(k)
		dv, err2 := url.QueryUnescape(val)
		if err1 != nil || err2 != nil {
			t.Errorf("peer: bad escaping in %q", pair)
		}
		v.Add(dk, dv)
	}
	return v
}

func (p *peer) Requests() []request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]request(nil), p.reqs...)
}

func (p *peer) Closed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *peer) Accepts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepts
}

// replies answers each command with a fixed line; unknown commands get
// Query.pm's "ERR unknown_command Unknown+server+command".
func replies(m map[string]string) func(request) answer {
	return func(r request) answer {
		if line, ok := m[r.Cmd]; ok {
			return answer{Line: line}
		}
		return answer{Line: "ERR unknown_command Unknown+server+command"}
	}
}

// deadAddr returns an address nobody listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// storage is a storage node: PUT stores, GET serves, any path under
// /fail/ answers 500 after reading the body and any under /early/ answers
// 500 without reading it.
type storage struct {
	*httptest.Server
	mu    sync.Mutex
	blobs map[string][]byte
	puts  []string
	gets  []string
}

func startStorage(t *testing.T) *storage {
	s := &storage{blobs: map[string][]byte{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if r.Method == http.MethodPut {
			s.puts = append(s.puts, r.URL.Path)
		} else {
			s.gets = append(s.gets, r.URL.Path)
		}
		s.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/early/") {
			w.Header().Set("Connection", "close")
			http.Error(w, "no space", http.StatusInsufficientStorage)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/fail/") {
			io.Copy(io.Discard, r.Body)
			http.Error(w, "disk on fire", http.StatusInternalServerError)
			return
		}
		switch r.Method {
		case http.MethodPut:
			if r.ContentLength < 0 {
				http.Error(w, "length required", http.StatusLengthRequired)
				return
			}
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			s.mu.Lock()
			s.blobs[r.URL.Path] = b
			s.mu.Unlock()
			w.WriteHeader(http.StatusCreated)
		case http.MethodGet:
			s.mu.Lock()
			b, ok := s.blobs[r.URL.Path]
			s.mu.Unlock()
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Write(b)
		default:
			http.Error(w, "no", http.StatusMethodNotAllowed)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *storage) blob(path string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.blobs[path]
	return b, ok
}
