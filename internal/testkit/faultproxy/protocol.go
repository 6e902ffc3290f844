package faultproxy

import (
	"encoding/binary"
	"strings"
	"sync"
)

// The proxy parses messages only to find COMMITs and the end of their
// replies. A message's bytes are forwarded as they arrive (except a
// PostgreSQL startup packet, held until complete so an SSLRequest can be
// answered locally); only a short prefix of each body is kept.

// handler is one direction's protocol logic, driven by a splitter.
type handler interface {
	// start is called at the first byte of a message: the header's
	// length and whether the message's bytes are forwarded.
	start() (hdrLen int, keep bool)
	// header is called with the complete header: the body's length, how
	// many of its bytes to capture, ok=false if the stream is not what
	// the protocol says (forward the rest blindly).
	header(hdr []byte) (bodyLen, capture int, ok bool)
	// end is called when the message is complete: bytes to forward in
	// its place or after it, and whether to cut the connection now.
	end(hdr, body []byte, truncated bool) (inject []byte, cut bool)
}

// splitter cuts a byte stream into messages for a handler.
type splitter struct {
	h      handler
	st     *protoState
	hdr    []byte
	hdrLen int // 0 = between messages
	body   []byte
	capN   int
	full   int // body length
	remain int // body bytes still to come; -1 while the header is incomplete
	keep   bool
}

// feed returns the bytes of b to forward and whether to cut after them.
func (s *splitter) feed(b []byte) (out []byte, cut bool) {
	out = make([]byte, 0, len(b))
	for len(b) > 0 {
		if s.st.isPassthrough() {
			return append(out, b...), false
		}
		if s.hdrLen == 0 {
			s.hdrLen, s.keep = s.h.start()
			s.hdr, s.body, s.remain = s.hdr[:0], s.body[:0], -1
		}
		if s.remain < 0 {
			n := min(s.hdrLen-len(s.hdr), len(b))
			s.hdr = append(s.hdr, b[:n]...)
			if s.keep {
				out = append(out, b[:n]...)
			}
			b = b[n:]
			if len(s.hdr) < s.hdrLen {
				continue // b is empty: the header goes on in the next chunk
			}
			var ok bool
			s.full, s.capN, ok = s.h.header(s.hdr)
			if !ok {
				s.st.setPassthrough()
				if !s.keep {
					out = append(out, s.hdr...)
				}
				return append(out, b...), false
			}
			s.remain = s.full
		}
		n := min(s.remain, len(b))
		if c := min(n, s.capN-len(s.body)); c > 0 {
			s.body = append(s.body, b[:c]...)
		}
		if s.keep {
			out = append(out, b[:n]...)
		}
		b = b[n:]
		s.remain -= n
		if s.remain == 0 {
			s.hdrLen = 0
			inject, cut := s.h.end(s.hdr, s.body, len(s.body) < s.full)
			out = append(out, inject...)
			if cut {
				return out, true
			}
		}
	}
	return out, false
}

// protoState is what the two directions of one connection share.
type protoState struct {
	mu          sync.Mutex
	passthrough bool

	// PostgreSQL
	startup    bool            // the next client message is a startup-phase packet
	sslPending int             // SSL/GSS requests the server has not answered yet
	syncs      int64           // client messages each answered by one ReadyForQuery
	zs         int64           // ReadyForQuery messages seen from the server
	commitAt   int64           // >0: the syncs-th ReadyForQuery ends a dropped commit
	stmts      map[string]bool // prepared statement name → its SQL is COMMIT
	portals    map[string]bool // portal name → bound to a COMMIT statement
	execCommit bool            // an Execute of COMMIT awaits its Sync

	// MySQL
	clientPkts int  // client packets seen
	myArmed    bool // the server's next packet is the reply of a dropped commit
	myMulti    bool // that commit ends a query of several statements
}

func (st *protoState) isPassthrough() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.passthrough
}

func (st *protoState) setPassthrough() {
	st.mu.Lock()
	st.passthrough = true
	st.mu.Unlock()
}

// inspectors returns the client→server and server→client filters for
// protocol pr, nil for plain TCP.
func (st *protoState) inspectors(c *conn, pr Protocol) (up, down func([]byte) ([]byte, bool)) {
	switch pr {
	case Postgres:
		st.startup = true
		st.stmts = map[string]bool{}
		st.portals = map[string]bool{}
		u := &splitter{h: &pgClient{c: c, st: st}, st: st}
		d := &splitter{h: &pgServer{c: c, st: st}, st: st}
		return u.feed, d.feed
	case MySQL:
		u := &splitter{h: &myClient{c: c, st: st}, st: st}
		d := &splitter{h: &myServer{c: c, st: st}, st: st}
		return u.feed, d.feed
	}
	return nil, nil
}

// isCommit reports whether sql is a bare COMMIT (END in PostgreSQL),
// ignoring case, surrounding space and trailing semicolons.
func isCommit(sql string, pg bool) bool {
	s := strings.TrimSpace(sql)
	for strings.HasSuffix(s, ";") {
		s = strings.TrimSpace(strings.TrimSuffix(s, ";"))
	}
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	switch s {
	case "commit", "commit work", "commit transaction":
		return true
	case "end", "end work", "end transaction":
		return pg
	}
	return false
}

// endsInCommit reports whether sql is several statements the last of which
// is a bare COMMIT. A ';' inside a string literal cannot be followed by a
// bare COMMIT at the very end, whose quote would still have to close.
func endsInCommit(sql string) bool {
	s := strings.TrimSpace(sql)
	for strings.HasSuffix(s, ";") {
		s = strings.TrimSpace(strings.TrimSuffix(s, ";"))
	}
	i := strings.LastIndexByte(s, ';')
	return i >= 0 && isCommit(s[i+1:], false)
}

// claim counts a commit the client sent and reports whether its reply is
// to be dropped.
func (c *conn) claim() bool {
	c.p.nCommit.Add(1)
	return c.p.claimDrop()
}

// cstrings splits a body into its NUL-terminated strings (a last string
// without NUL is returned too: it may be a truncated capture).
func cstrings(b []byte, n int) []string {
	var out []string
	for len(out) < n && len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != 0 {
			i++
		}
		out = append(out, string(b[:i]))
		if i == len(b) {
			break
		}
		b = b[i+1:]
	}
	for len(out) < n {
		out = append(out, "")
	}
	return out
}

// PostgreSQL startup request codes (protocol 3.0 §"Message Formats").
const (
	pgSSLRequest    = 80877103
	pgGSSENCRequest = 80877104
	pgCancelRequest = 80877102
	pgMaxStartup    = 10000 // the server's own limit on a startup packet
)

// pgClient parses frontend messages.
type pgClient struct {
	c  *conn
	st *protoState
}

func (h *pgClient) start() (int, bool) {
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	if h.st.startup {
		return 4, false // held until complete: it may be an SSLRequest to answer here
	}
	return 5, true
}

func (h *pgClient) header(hdr []byte) (int, int, bool) {
	if len(hdr) == 4 {
		n := int(int32(binary.BigEndian.Uint32(hdr))) - 4
		if n < 4 || n > pgMaxStartup {
			return 0, 0, false
		}
		return n, n, true
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[1:]))) - 4
	if n < 0 {
		return 0, 0, false
	}
	switch hdr[0] {
	case 'Q', 'B':
		return n, 256, true
	case 'P':
		return n, 512, true // statement name (≤63 bytes) and the SQL
	case 'E':
		return n, 128, true
	}
	return n, 0, true
}

func (h *pgClient) end(hdr, body []byte, truncated bool) ([]byte, bool) {
	st := h.st
	if len(hdr) == 4 {
		raw := append(append([]byte(nil), hdr...), body...)
		switch binary.BigEndian.Uint32(body) {
		case pgSSLRequest, pgGSSENCRequest:
			if h.c.p.o.DenyTLS {
				// No server is involved yet: answering for it keeps
				// the client in plain text, where commits can be seen.
				h.c.client.Write([]byte{'N'})
				return nil, false
			}
			st.mu.Lock()
			st.sslPending++
			st.mu.Unlock()
			return raw, false
		case pgCancelRequest:
			return raw, false
		}
		st.mu.Lock()
		st.startup = false
		st.syncs++ // the server ends the startup phase with a ReadyForQuery
		st.mu.Unlock()
		return raw, false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	switch hdr[0] {
	case 'Q': // simple query: one ReadyForQuery ends its reply
		st.syncs++
		h.c.p.nRT.Add(1)
		if !truncated && isCommit(cstrings(body, 1)[0], true) && h.c.claim() && st.commitAt == 0 {
			st.commitAt = st.syncs
		}
	case 'P': // Parse: name, SQL
		f := cstrings(body, 2)
		if !truncated && isCommit(f[1], true) {
			st.stmts[f[0]] = true
		} else {
			delete(st.stmts, f[0])
		}
	case 'B': // Bind: portal, statement
		f := cstrings(body, 2)
		if st.stmts[f[1]] {
			st.portals[f[0]] = true
		} else {
			delete(st.portals, f[0])
		}
	case 'E': // Execute: portal
		if st.portals[cstrings(body, 1)[0]] {
			st.execCommit = true
		}
	case 'S': // Sync: one ReadyForQuery ends what came before it
		st.syncs++
		h.c.p.nRT.Add(1)
		if st.execCommit {
			st.execCommit = false
			if h.c.claim() && st.commitAt == 0 {
				st.commitAt = st.syncs
			}
		}
	case 'F': // FunctionCall is answered with a ReadyForQuery too
		st.syncs++
		h.c.p.nRT.Add(1)
	}
	return nil, false
}

// pgServer parses backend messages.
type pgServer struct {
	c       *conn
	st      *protoState
	discard bool // the current message belongs to a dropped commit's reply
}

func (h *pgServer) start() (int, bool) {
	st := h.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.sslPending > 0 {
		return 1, true // the one-byte answer to an SSLRequest
	}
	// After the ReadyForQuery before the commit's, everything up to the
	// commit's own ReadyForQuery is its reply.
	h.discard = st.commitAt > 0 && st.zs >= st.commitAt-1
	return 5, !h.discard
}

func (h *pgServer) header(hdr []byte) (int, int, bool) {
	if len(hdr) == 1 {
		return 0, 0, true
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[1:]))) - 4
	if n < 0 {
		return 0, 0, false
	}
	return n, 0, true
}

func (h *pgServer) end(hdr, _ []byte, _ bool) ([]byte, bool) {
	st := h.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(hdr) == 1 {
		st.sslPending--
		if hdr[0] != 'N' {
			// 'S' or 'G': encryption follows, which the proxy cannot read.
			st.passthrough = true
			h.c.p.logf("%s: server accepted encryption (%q): commits on this connection are not seen", h.c.client.RemoteAddr(), hdr[0])
		}
		return nil, false
	}
	if hdr[0] == 'Z' {
		st.zs++
		if st.commitAt > 0 && st.zs == st.commitAt {
			return nil, true
		}
	}
	return nil, false
}

// MySQL capability flags the proxy must notice in the handshake response.
const (
	myClientCompress = 0x00000020
	myClientSSL      = 0x00000800
	myComQuery       = 0x03
)

// myClient parses client packets: 3-byte length, sequence id, payload.
type myClient struct {
	c  *conn
	st *protoState
}

func (h *myClient) start() (int, bool) { return 4, true }

// myQueryCapture is how much of a query the proxy reads to find a COMMIT:
// a query of several statements ending in one (multiStatements) is a
// commit too, and its COMMIT comes last.
const myQueryCapture = 16 << 10

func (h *myClient) header(hdr []byte) (int, int, bool) {
	n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	return n, myQueryCapture, true
}

func (h *myClient) end(hdr, body []byte, truncated bool) ([]byte, bool) {
	st := h.st
	st.mu.Lock()
	defer st.mu.Unlock()
	st.clientPkts++
	if st.clientPkts == 1 && len(body) >= 4 {
		// The handshake response (or an SSL request) comes first.
		caps := binary.LittleEndian.Uint32(body)
		if caps&(myClientSSL|myClientCompress) != 0 {
			st.passthrough = true
			h.c.p.logf("%s: client asked for TLS or compression: commits on this connection are not seen", h.c.client.RemoteAddr())
		}
		return nil, false
	}
	if hdr[3] == 0 {
		h.c.p.nRT.Add(1) // a command; anything later in the exchange has a higher sequence id
	}
	if hdr[3] == 0 && len(body) > 0 && body[0] == myComQuery && !truncated {
		q := string(body[1:])
		multi := !isCommit(q, false) && endsInCommit(q)
		if (multi || isCommit(q, false)) && h.c.claim() {
			st.myArmed, st.myMulti = true, multi
		}
	}
	return nil, false
}

// myServer parses server packets.
type myServer struct {
	c       *conn
	st      *protoState
	discard bool
	multi   bool // discarding the replies of an armed query of several statements
}

func (h *myServer) start() (int, bool) {
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	// The client sends a command only after reading the whole reply to
	// the previous one, so the first packet after an armed COMMIT is its
	// reply (OK or ERR); after an armed query of several statements, its
	// replies run to the first ERR or the first OK without
	// SERVER_MORE_RESULTS_EXISTS.
	h.discard = h.st.myArmed
	h.multi = h.discard && h.st.myMulti
	return 4, !h.discard
}

func (h *myServer) header(hdr []byte) (int, int, bool) {
	capture := 0
	if h.multi {
		capture = 32
	}
	return int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16, capture, true
}

func (h *myServer) end(_, body []byte, _ bool) ([]byte, bool) {
	if h.multi && !lastReply(body) {
		return nil, false
	}
	return nil, h.discard
}

// MySQL server status flag: more results of the query follow.
const myMoreResults = 0x0008

// lastReply reports whether a server packet ends the replies to a query
// of several statements: an ERR (the server stops at a failing
// statement), or an OK whose status flags say no result follows. A 0x00
// packet is taken for an OK: right for statements that answer OK or ERR,
// and for result sets whose rows never begin with an empty string (a text
// row's first column; gomogile's own such queries read numbers first).
func lastReply(body []byte) bool {
	if len(body) == 0 {
		return false
	}
	switch body[0] {
	case 0xFF:
		return true
	case 0x00:
		rest := body[1:]
		for range 2 { // affected rows, last insert id: length-encoded
			n, ok := lenencLen(rest)
			if !ok || len(rest) < n {
				return true
			}
			rest = rest[n:]
		}
		if len(rest) < 2 {
			return true
		}
		return binary.LittleEndian.Uint16(rest)&myMoreResults == 0
	}
	return false
}

// lenencLen is the length of the length-encoded integer b starts with.
func lenencLen(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	switch b[0] {
	case 0xFC:
		return 3, true
	case 0xFD:
		return 4, true
	case 0xFE:
		return 9, true
	case 0xFB, 0xFF:
		return 0, false
	}
	return 1, true
}
