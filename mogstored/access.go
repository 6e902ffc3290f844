package mogstored

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/gomogile/gomogile/internal/netlist"
)

// Protections against hostile clients (the README's "Security"). The
// original let anyone who reached a storage node write and delete files,
// overwrite the usage files the trackers read and stop it from the
// management port. The network lists keep that as the default (empty =
// everyone), so existing setups and tools keep working, and let an operator
// lock it down to the trackers' and clients' networks.

// Defaults of the limits (see Config).
const (
	DefaultBodyTimeout     = 30 * time.Second
	DefaultMinBodyRate     = 1024 // bytes per second
	DefaultMgmtMaxConns    = 1000
	DefaultMgmtIdleTimeout = 10 * time.Minute
)

// ParseNetworks reads a comma-separated list of addresses or
// address/bits prefixes, as the writenetworks and mgmtnetworks keys take
// them. An empty list is nil (everyone).
func ParseNetworks(v string) ([]netip.Prefix, error) { return netlist.Parse(v) }

// inNetworks reports whether the peer at remote (host:port) is in one of
// nets; no nets allows everyone.
func inNetworks(nets []netip.Prefix, remote string) bool {
	ap, _ := netip.ParseAddrPort(remote) // unparsable: an invalid address, refused by a list
	return netlist.Allows(nets, ap.Addr())
}

// writeRefused answers a request that may not change the node: a write
// from outside writenetworks, or a write to a device's usage file, which
// the node itself maintains and the trackers trust. It reports whether it
// answered.
func (s *Server) writeRefused(w http.ResponseWriter, r *http.Request, p reqPath) bool {
	switch r.Method {
	case http.MethodPut, http.MethodDelete, "MKCOL":
	default:
		return false
	}
	if !inNetworks(s.cfg.WriteNetworks, r.RemoteAddr) {
		s.log.Warn("write refused: not in writenetworks", "method", r.Method, "uri", truncate(r.RequestURI), "remote", r.RemoteAddr)
		httpError(w, http.StatusForbidden, r.Method+" is not allowed from your address (writenetworks)")
		return true
	}
	if p.rel == "usage" {
		s.log.Warn("write refused: usage file", "method", r.Method, "uri", truncate(r.RequestURI), "remote", r.RemoteAddr)
		httpError(w, http.StatusForbidden, "the usage file is written by the storage node")
		return true
	}
	return false
}

// shutdownRefused is the management port's answer to "shutdown" from
// outside mgmtnetworks, or "" when the peer may stop the node.
func (s *Server) shutdownRefused(c net.Conn) string {
	if inNetworks(s.cfg.MgmtNetworks, c.RemoteAddr().String()) {
		return ""
	}
	s.log.Warn("shutdown refused: not in mgmtnetworks", "remote", c.RemoteAddr().String())
	return "ERROR: access denied: shutdown is not allowed from your address (mgmtnetworks)"
}

// truncate bounds a client-chosen string in a log line.
func truncate(s string) string {
	const max = 256
	if len(s) <= max {
		return s
	}
	return s[:max] + "...(" + strconv.Itoa(len(s)-max) + " bytes more)"
}
