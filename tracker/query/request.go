package query

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gomogile/gomogile/internal/wire"
)

// Request is one query command with what handlers need to know about its
// client. The server fills it from the parsed line and the connection.
type Request struct {
	// Cmd is the lower-cased command name.
	Cmd string
	// Args are the decoded arguments.
	Args Args
	// ClientIP is the peer's address ("" when the connection is not IP).
	ClientIP string
	// AltZone is zone=alt: answer with hosts' alternate IPs.
	AltZone bool
	// Bulk is the request's context without request_timeout, cancelled
	// like it when the client goes away or the tracker gives up: for
	// reading a whole blob (create_close's checksum check), which takes as
	// long as the blob is big and is bounded by node_timeout per wait
	// instead. Nil means context.Background().
	Bulk context.Context
}

// bulk is r.Bulk, or the background context for a request made without
// one (a caller outside the server, such as a test).
func (r *Request) bulk() context.Context {
	if r.Bulk == nil {
		return context.Background()
	}
	return r.Bulk
}

// Args are decoded request arguments. Repeated names are joined with NUL
// as MogileFS::Util::decode_url_args does.
type Args map[string]string

// Get returns the argument or "".
func (a Args) Get(k string) string { return a[k] }

// Has reports whether the argument was given at all.
func (a Args) Has(k string) bool { _, ok := a[k]; return ok }

// Reply is an ordered set of reply arguments. The original emitted Perl
// hash order (random); we keep insertion order so replies are stable.
type Reply struct {
	keys []string
	vals map[string]string
}

// Set adds or replaces k.
func (r *Reply) Set(k string, v any) {
	if r.vals == nil {
		r.vals = map[string]string{}
	}
	if _, ok := r.vals[k]; !ok {
		r.keys = append(r.keys, k)
	}
	r.vals[k] = fmt.Sprint(v)
}

// Get returns the value set for k.
func (r *Reply) Get(k string) string { return r.vals[k] }

// Encode renders the arguments as the original's ok_line did.
func (r *Reply) Encode() string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	for i, k := range r.keys {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(wire.Escape(k))
		b.WriteByte('=')
		b.WriteString(wire.Escape(r.vals[k]))
	}
	return b.String()
}

// ProtoError is an "ERR code text" reply; a handler returns one (made by
// perr) for an answer the protocol defines, and the server writes it as
// the ERR line. Text "" means the original's default text for Code.
type ProtoError struct{ Code, Text string }

func (e *ProtoError) Error() string { return e.Code + ": " + e.Text }

// perr makes a protocol error; text "" means the original's default text.
func perr(code string, text ...string) error {
	e := &ProtoError{Code: code}
	if len(text) > 0 {
		e.Text = text[0]
	}
	return e
}

// PerlTrue is Perl truthiness of a string argument.
func PerlTrue(s string) bool { return s != "" && s != "0" }

// PerlNum is Perl's numeric value of a string: leading digits, else 0.
func PerlNum(s string) int64 {
	s = strings.TrimSpace(s)
	end := 0
	if end < len(s) && (s[end] == '-' || s[end] == '+') {
		end++
	}
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, err := strconv.ParseInt(s[:end], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// numArg is PerlNum for arguments whose value matters beyond its sign: it
// also reports whether the leading digits fit an int64. PerlNum turns an
// overflow into 0, which made set_weight weight=99999999999999999999 set
// weight 0 and create_open fid=<huge> allocate as if no fid were named.
func numArg(s string) (n int64, ok bool) {
	s = strings.TrimSpace(s)
	end := 0
	if end < len(s) && (s[end] == '-' || s[end] == '+') {
		end++
	}
	digits := end
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == digits {
		return 0, true // no digits: Perl's 0
	}
	n, err := strconv.ParseInt(s[:end], 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// maxWeightArg is the largest set_weight weight: device.weight is a
// signed MEDIUMINT in the original schema.
const maxWeightArg = 8388607
