package mogstored

// Refusals end connections on time (issue 21, point 3): a request the node
// answers without reading its body gets the answer at once with
// "Connection: close", and a client that keeps trickling that body cannot
// hold the connection past bodytimeout.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// refusalBodyTimeout is the tests' bodytimeout: short so that a refused
// connection closes soon, long beside the time a local answer takes.
const refusalBodyTimeout = 4 * time.Second

// slack is the generous margin the tests allow beyond refusalBodyTimeout
// for the close to be seen on a loaded machine.
const slack = 10 * time.Second

// firstBytes is the start of each trickled body: more than net/http buffers
// with the head, so that bytes the node will not read wait on the
// connection when it answers.
var firstBytes = strings.Repeat("f", 16<<10)

// trickler is a raw HTTP client that sends a request head and the body's
// first bytes, then one more body byte every 200 ms, never finishing the
// body, until the server closes the connection or the test ends. It reads
// the answer as it comes.
type trickler struct {
	sent time.Time // when the head went out
	out  chan trickleOutcome
}

type trickleOutcome struct {
	res      *http.Response // nil when err is set
	err      error          // reading the answer
	answered time.Duration  // after the head went out
	end      error          // what a read after the answer saw
	ended    time.Duration
}

func startTrickle(t *testing.T, addr, local, head string) *trickler {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, head); err != nil {
		c.Close()
		t.Fatal(err)
	}
	tr := &trickler{sent: time.Now(), out: make(chan trickleOutcome, 1)}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				c.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := io.WriteString(c, "x"); err != nil {
					return // the server closed the connection
				}
			}
		}
	}()
	go func() {
		var o trickleOutcome
		defer func() { tr.out <- o }()
		c.SetReadDeadline(tr.sent.Add(refusalBodyTimeout + slack))
		r := bufio.NewReader(c)
		if o.res, o.err = http.ReadResponse(r, nil); o.err != nil {
			return
		}
		if _, o.err = io.Copy(io.Discard, o.res.Body); o.err != nil {
			return
		}
		o.answered = time.Since(tr.sent)
		var b byte
		if b, o.end = r.ReadByte(); o.end == nil {
			o.end = fmt.Errorf("got %q after the answer", b)
		}
		o.ended = time.Since(tr.sent)
	}()
	t.Cleanup(func() {
		close(stop)
		c.Close()
		<-done
	})
	return tr
}

// check waits for the outcome: the answer came with Connection: close
// before bodytimeout (the node did not wait for the body), and then the
// server closed the connection (EOF; a reset when it gave up on unread
// bytes and orderly is false) within the tests' generous bound.
func (tr *trickler) check(t *testing.T, want int, orderly bool) {
	t.Helper()
	o := <-tr.out
	if o.err != nil {
		t.Fatalf("no answer %v after the head while the body trickles: %v", time.Since(tr.sent), o.err)
	}
	if o.res.StatusCode != want {
		t.Errorf("status %d; want %d", o.res.StatusCode, want)
	}
	if !o.res.Close {
		t.Errorf("answer without Connection: close (header %q)", o.res.Header.Get("Connection"))
	}
	if o.answered >= refusalBodyTimeout {
		t.Errorf("answer after %v; want it before bodytimeout (%v): it must not wait for the body", o.answered, refusalBodyTimeout)
	}
	closed := errors.Is(o.end, io.EOF) || isReset(o.end) && !orderly
	if !closed {
		how := "closed"
		if orderly {
			how = "closed with a FIN"
		}
		t.Errorf("after the answer, %v after the head (bodytimeout %v): %v; want the connection %s",
			o.ended, refusalBodyTimeout, o.end, how)
	}
}

// startRefusalServer runs a node whose writenetworks is 127.0.0.2 only.
func startRefusalServer(t *testing.T, mutate func(*Config)) *Server {
	t.Helper()
	s, _ := startServer(t, func(c *Config) {
		c.BodyTimeout = refusalBodyTimeout
		c.WriteNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}
		if mutate != nil {
			mutate(c)
		}
	})
	return s
}

const (
	outsider = "127.0.0.1" // outside the test's writenetworks
	insider  = "127.0.0.2"
)

// Every way the node answers a request with a body it does not read: the
// answer comes at once with Connection: close, and the connection is gone
// within bodytimeout although the client never stops sending.
func TestRefusal_TrickledBodyClosed(t *testing.T) {
	s := startRefusalServer(t, nil)
	const cl = "Content-Length: 100000\r\n"
	for _, c := range []struct {
		name, local, head string
		want              int
		orderly           bool // a body too large to read: net/http half-closes first
	}{
		{"OutsideWriteNetworks", outsider, "PUT /dev1/a.fid HTTP/1.1\r\nHost: x\r\n" + cl, http.StatusForbidden, false},
		{"UsageFile", insider, "PUT /dev1/usage HTTP/1.1\r\nHost: x\r\n" + cl, http.StatusForbidden, false},
		{"UsageFileChunked", insider, "PUT /dev1/usage HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffff", http.StatusForbidden, false},
		{"UsageFileHTTP10", insider, "PUT /dev1/usage HTTP/1.0\r\n" + cl, http.StatusForbidden, false},
		{"UsageFileLargeBody", insider, "PUT /dev1/usage HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n", http.StatusForbidden, true},
		{"DeleteOutsideWriteNetworks", outsider, "DELETE /dev1/a.fid HTTP/1.1\r\nHost: x\r\n" + cl, http.StatusForbidden, false},
		{"DocRoot", insider, "PUT / HTTP/1.1\r\nHost: x\r\n" + cl, http.StatusForbidden, false},
		{"NotADevice", insider, "PUT /nodev/a.fid HTTP/1.1\r\nHost: x\r\n" + cl, http.StatusForbidden, false},
		{"BadPath", insider, "PUT /dev1/.hidden HTTP/1.1\r\nHost: x\r\n" + cl, http.StatusBadRequest, false},
		{"DotDot", insider, "PUT /dev1/../a.fid HTTP/1.1\r\nHost: x\r\n" + cl, http.StatusBadRequest, false},
		{"MissingDevice", insider, "PUT /dev9/a.fid HTTP/1.1\r\nHost: x\r\n" + cl, http.StatusNotFound, false},
		{"MethodNotAllowed", insider, "POST /dev1/a.fid HTTP/1.1\r\nHost: x\r\n" + cl, http.StatusMethodNotAllowed, false},
		{"MKCOLWithBody", insider, "MKCOL /dev1/d HTTP/1.1\r\nHost: x\r\n" + cl, http.StatusUnsupportedMediaType, false},
		{"NoFileName", insider, "PUT /dev1/d/ HTTP/1.1\r\nHost: x\r\n" + cl, http.StatusBadRequest, false},
		{"MalformedContentRange", insider, "PUT /dev1/a.fid HTTP/1.1\r\nHost: x\r\nContent-Range: bytes 5-/*\r\n" + cl, http.StatusBadRequest, false},
		{"ContentRangeLength", insider, "PUT /dev1/a.fid HTTP/1.1\r\nHost: x\r\nContent-Range: bytes 0-9/*\r\n" + cl, http.StatusBadRequest, false},
		{"BadContentMD5", insider, "PUT /dev1/a.fid HTTP/1.1\r\nHost: x\r\nContent-MD5: nope\r\n" + cl, http.StatusBadRequest, false},
		{"ParentIsFile", insider, "PUT /dev1/usage/a.fid HTTP/1.1\r\nHost: x\r\n" + cl, http.StatusConflict, false},
		{"DeleteMissing", insider, "DELETE /dev1/missing.fid HTTP/1.1\r\nHost: x\r\n" + cl, http.StatusNotFound, false},
		{"GetWithBody", outsider, "GET /dev1/usage HTTP/1.1\r\nHost: x\r\n" + cl, http.StatusOK, false},
		// net/http answers this itself, before any handler runs.
		{"UnknownExpect", insider, "PUT /dev1/a.fid HTTP/1.1\r\nHost: x\r\nExpect: something\r\n" + cl, http.StatusExpectationFailed, false},
	} {
		// All at once: each waits about bodytimeout for its close.
		tr := startTrickle(t, s.HTTPAddr(), c.local, c.head+"\r\n"+firstBytes)
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tr.check(t, c.want, c.orderly)
		})
	}
}

// Beyond maxconnsperip the node answers 503 before reading anything and
// closes at once, whatever the client sent and still sends. Closing with
// the request unread resets the connection, so the answer carries its
// length: the client knows it has all of it before the reset.
func TestRefusal_PerAddressLimitClosed(t *testing.T) {
	s := startRefusalServer(t, func(c *Config) {
		c.MaxConns = 2
		c.MaxConnsPerIP = 1
	})
	// Two kept connections take both slots, so the refused one waits for
	// Accept with its request already sent.
	held := make([]net.Conn, 2)
	for i, local := range []string{outsider, insider} {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		c, err := d.Dial("tcp", s.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET /dev1/usage HTTP/1.1\r\nHost: x\r\n\r\n")
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("kept connection %d: %v %v", i, res, err)
		}
		io.Copy(io.Discard, res.Body)
		held[i] = c
	}
	tr := startTrickle(t, s.HTTPAddr(), outsider, "PUT /dev1/a.fid HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"+firstBytes)
	held[1].Close() // frees a slot: the PUT is accepted and refused
	tr.check(t, http.StatusServiceUnavailable, false)
}

// As many trickling refused requests as maxconns allows do not keep a
// normal GET out: their connections end within bodytimeout and free the
// slots.
func TestRefusal_MaxConnsNotStarved(t *testing.T) {
	const maxConns = 3
	s := startRefusalServer(t, func(c *Config) { c.MaxConns = maxConns })
	for i := range maxConns {
		local, uri := outsider, "/dev1/a.fid"
		if i%2 == 1 {
			local, uri = insider, "/dev1/usage"
		}
		startTrickle(t, s.HTTPAddr(), local, "PUT "+uri+" HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"+firstBytes)
	}
	// Dialled after the tricklers, so accepted after them: it waits for a slot.
	c := clientFrom(outsider)
	c.Timeout = refusalBodyTimeout + slack
	res, err := c.Get("http://" + s.HTTPAddr() + "/dev1/usage")
	if err != nil {
		t.Fatalf("GET behind %d trickling refused requests (maxconns %d): %v", maxConns, maxConns, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("GET: %s", res.Status)
	}
}

// A body read to its end keeps the connection for the next request, as
// the trackers' replication does (a PUT, then a GET on one connection).
func TestRefusal_CompleteBodyKeepsConnection(t *testing.T) {
	s := startRefusalServer(t, nil)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(insider)}}
	c, err := d.Dial("tcp", s.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	io.WriteString(c, "PUT /dev1/a.fid HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
	res, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusOK || res.Close {
		t.Fatalf("PUT: status %d, close %v; want 200 keeping the connection", res.StatusCode, res.Close)
	}
	io.WriteString(c, "GET /dev1/a.fid HTTP/1.1\r\nHost: x\r\n\r\n")
	res, err = http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || string(b) != "hello" {
		t.Errorf("GET on the same connection: %d %q", res.StatusCode, b)
	}
}

// Mounted in another http.Server (without the node's own connection
// hook), the handler still answers a refusal at once and ends the
// connection within bodytimeout.
func TestRefusal_MountedElsewhere(t *testing.T) {
	docroot := t.TempDir()
	cfg := DefaultConfig()
	cfg.DocRoot = docroot
	cfg.BodyTimeout = refusalBodyTimeout
	s := New(cfg)
	srv := &http.Server{Handler: s}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	tr := startTrickle(t, ln.Addr().String(), outsider, "PUT /dev1/usage HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"+firstBytes)
	tr.check(t, http.StatusForbidden, false)
}
