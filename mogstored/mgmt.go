package mogstored

import (
	"bufio"
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"regexp"
	"strings"
	"time"
)

// Command forms of Mogstored::SideChannelClient.
var (
	sizeCmd   = regexp.MustCompile(`^size (\S+)$`)
	watchCmd  = regexp.MustCompile(`(?i)^watch$`)
	digestCmd = regexp.MustCompile(`^(MD5|SHA-1) (\S+)(?: (\w+))?$`)
)

const maxMgmtLine = 4096

func (s *Server) acceptMgmt() {
	for {
		c, err := s.mgmtLn.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Error("mgmt accept", "err", err)
			}
			return
		}
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			c.Close()
			return
		}
		if !s.admitMgmt(c) {
			s.mu.Unlock()
			continue
		}
		s.conns[c] = struct{}{}
		s.loops.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.loops.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			s.serveMgmt(c)
		}()
	}
}

// serveMgmt answers one connection's commands in order, as the original did
// (it stopped reading while a digest ran).
func (s *Server) serveMgmt(c net.Conn) {
	br := bufio.NewReaderSize(c, maxMgmtLine)
	bw := bufio.NewWriter(c)
	reply := func(format string, args ...any) bool {
		fmt.Fprintf(bw, format, args...)
		return bw.Flush() == nil
	}
	for {
		s.mgmtIdle(c)
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			reply("ERROR: line too long\r\n")
			return
		}
		if err != nil {
			return
		}
		cmd := strings.TrimRight(string(line), "\r\n")
		if cmd == "" {
			continue
		}
		switch {
		case sizeCmd.MatchString(cmd):
			uri := sizeCmd.FindStringSubmatch(cmd)[1]
			size, err := s.mgmtSize(uri)
			if err != nil {
				if !reply("ERROR: %v\r\n", err) {
					return
				}
				continue
			}
			if !reply("%s %d\r\n", uri, size) {
				return
			}
		case watchCmd.MatchString(cmd):
			if s.iostat == nil || !s.iostat.available() {
				if !reply("ERR iostat unavailable\r\n") {
					return
				}
				continue
			}
			// Like the original, a watching connection only streams from
			// now on; it is not idle while it does.
			c.SetReadDeadline(time.Time{})
			s.watch(c, br)
			return
		case digestCmd.MatchString(cmd):
			m := digestCmd.FindStringSubmatch(cmd)
			if !reply("%s", s.mgmtDigest(m[1], m[2], m[3])) {
				return
			}
		default:
			out, shutdown := manageCommand(cmd)
			if shutdown {
				if refused := s.shutdownRefused(c); refused != "" {
					out, shutdown = refused, false
				}
			}
			if !reply("%s\r\n", out) {
				return
			}
			if shutdown {
				s.log.Info("shutdown requested on the management port", "remote", c.RemoteAddr().String())
				// Not tracked by loops: Close waits for this connection.
				go s.Close()
				return
			}
		}
	}
}

// manageCommand stands in for Perlbal's manage interface, which the original
// handed every line it did not know: Perlbal lower-cased the command word and
// answered "ERROR: unknown command: <word>".
func manageCommand(cmd string) (out string, shutdown bool) {
	cmd = strings.Join(strings.Fields(cmd), " ")
	word := cmd
	if i := strings.IndexByte(cmd, ' '); i >= 0 {
		word = cmd[:i]
	}
	word = strings.ToLower(word)
	if word == "" || !isWord(word[0]) {
		return "ERROR: invalid command", false
	}
	end := 0
	for end < len(word) && isWord(word[end]) {
		end++
	}
	word = word[:end]
	switch word {
	case "shutdown":
		args := strings.Fields(strings.ToLower(cmd))[1:]
		if len(args) > 2 || len(args) >= 1 && args[0] != "graceful" {
			return "ERROR: usage: shutdown [graceful]", false
		}
		// Both forms shut down gracefully here: in-flight uploads finish
		// or are discarded cleanly, never left half-written.
		return "OK", true
	}
	return "ERROR: unknown command: " + word, false
}

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// mgmtSize answers "size": the byte size of a regular file, -1 when missing.
func (s *Server) mgmtSize(uri string) (int64, error) {
	p, err := parseReqPath(uri)
	if errors.Is(err, errDotDot) {
		return 0, err
	}
	if err != nil {
		return -1, nil
	}
	root, err := openDevice(s.cfg.DocRoot, p.dev)
	if err != nil {
		return -1, nil
	}
	defer root.Close()
	fi, err := root.Stat(p.rel)
	if err != nil {
		if errors.Is(classify(s.cfg.DocRoot, p, err), errEscapes) {
			return 0, errEscapes
		}
		return -1, nil
	}
	if !fi.Mode().IsRegular() {
		return -1, nil
	}
	return fi.Size(), nil
}

// mgmtDigest answers "MD5 <uri> [reason]" / "SHA-1 …" with
// "<uri> <alg>=<hex>", "<uri> <alg>=-1" when the file cannot be opened, or
// "ERR read <uri> at <offset> failed" (MogileFS::HTTPFile::digest_mgmt parses
// all three). With reason "fsck" digests queue one at a time per device, as
// Mogstored::TaskQueue did, so fsck cannot starve the disk.
func (s *Server) mgmtDigest(alg, uri, reason string) string {
	p, err := parseReqPath(uri)
	if errors.Is(err, errDotDot) {
		return "ERROR: " + err.Error() + "\r\n"
	}
	missing := fmt.Sprintf("%s %s=-1\r\n", uri, alg)
	if err != nil {
		return missing
	}
	root, err := openDevice(s.cfg.DocRoot, p.dev)
	if err != nil {
		return missing
	}
	defer root.Close()
	f, err := root.Open(p.rel)
	if err != nil {
		if errors.Is(classify(s.cfg.DocRoot, p, err), errEscapes) {
			return "ERROR: " + errEscapes.Error() + "\r\n"
		}
		return missing
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return missing
	}
	if reason == "fsck" {
		q := s.fsckQueue(p.dev)
		select {
		case q <- struct{}{}:
			defer func() { <-q }()
		case <-s.ctx.Done():
			return fmt.Sprintf("ERR read %s at 0 failed\r\n", uri)
		}
	}
	var h hash.Hash
	if alg == "MD5" {
		h = md5.New()
	} else {
		h = sha1.New()
	}
	buf := make([]byte, 1<<20)
	var off int64
	for {
		if s.ctx.Err() != nil {
			return fmt.Sprintf("ERR read %s at %d failed\r\n", uri, off)
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		off += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			s.log.Error("digest read", "uri", uri, "offset", off, "err", err)
			return fmt.Sprintf("ERR read %s at %d failed\r\n", uri, off)
		}
	}
	return fmt.Sprintf("%s %s=%s\r\n", uri, alg, hex.EncodeToString(h.Sum(nil)))
}

func (s *Server) fsckQueue(dev string) chan struct{} {
	s.fsckMu.Lock()
	defer s.fsckMu.Unlock()
	q, ok := s.fsckQueues[dev]
	if !ok {
		q = make(chan struct{}, 1)
		s.fsckQueues[dev] = q
	}
	return q
}

// watch streams I/O utilisation reports to c until it hangs up or the server
// closes. Reports the client is too slow for are dropped, as the original
// skipped sockets with a pending write buffer.
func (s *Server) watch(c net.Conn, br *bufio.Reader) {
	ch, unsubscribe := s.iostat.subscribe()
	defer unsubscribe()
	gone := make(chan struct{})
	go func() {
		// Anything the watcher sends is ignored; EOF means it left.
		io.Copy(io.Discard, br)
		close(gone)
	}()
	for {
		select {
		case <-gone:
			return
		case <-s.ctx.Done():
			return
		case report := <-ch:
			if _, err := io.WriteString(c, report); err != nil {
				return
			}
		}
	}
}
