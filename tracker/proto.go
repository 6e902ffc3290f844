package tracker

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gomogile/gomogile/internal/wire"
	"github.com/gomogile/gomogile/tracker/query"
)

// MaxLineBytes caps one request line. The original tracker buffers without
// limit; a cap keeps one misbehaving client from exhausting memory. Real
// requests are small: the longest are create_close with a path and checksum.
const MaxLineBytes = 64 << 10

// Request is one parsed protocol line.
type Request struct {
	// Admin is set for lines starting with '!' (ProcManager commands);
	// Cmd is then the word after '!' and Raw the rest of the line.
	Admin bool
	// Cmd is the lower-cased command name.
	Cmd string
	// Args are the decoded arguments. Repeated names are joined with NUL
	// as MogileFS::Util::decode_url_args does.
	Args Args
	// Raw is the argument text as received.
	Raw string
}

// Args are decoded request arguments (query.Args: the query commands read
// them).
type Args = query.Args

// Errors of ParseRequest. The server answers them as protocol errors; none
// of them closes the connection except ErrLineTooLong.
var (
	ErrEmptyLine   = errors.New("tracker: empty request line")
	ErrBadCommand  = errors.New("tracker: malformed command")
	ErrBadEncoding = errors.New("tracker: bad URL encoding")
	ErrLineTooLong = errors.New("tracker: request line too long")
)

// ParseRequest parses one request line without its line terminator (a
// trailing "\r" is tolerated). The grammar is the original tracker's:
//
//	!cmd [args]              admin command (ProcManager)
//	cmd [urlencoded-args]    query command (Worker::Query); cmd is \w+
//
// Arguments are split on '&', each pair on its first '=' ; '+' is a space
// and %XX a byte. Unlike the original, a '%' not followed by two hex digits
// is an error (ErrBadEncoding): the original passed it through literally,
// which silently corrupted keys.
func ParseRequest(line string) (Request, error) {
	line = strings.TrimSuffix(line, "\r")
	if len(line) > MaxLineBytes {
		return Request{}, ErrLineTooLong
	}
	if line == "" {
		return Request{}, ErrEmptyLine
	}
	if line[0] == '!' {
		// Client.pm: /^!(\S+)(?:\s+(.+))?$/
		rest := line[1:]
		i := strings.IndexAny(rest, " \t")
		cmd, args := rest, ""
		if i >= 0 {
			cmd, args = rest[:i], strings.TrimLeft(rest[i:], " \t")
		}
		if cmd != "" {
			return Request{Admin: true, Cmd: cmd, Raw: args}, nil
		}
		// A lone "!" falls through to the query path and fails there as
		// an unknown command, as in the original.
	}
	// Worker::Query: /^(\w+)\s*(.*)/ after leading whitespace.
	s := strings.TrimLeft(line, " \t")
	n := 0
	for n < len(s) && isWordByte(s[n]) {
		n++
	}
	if n == 0 {
		return Request{}, ErrBadCommand
	}
	cmd := strings.ToLower(s[:n])
	raw := strings.TrimLeft(s[n:], " \t\r\n\f\v")
	args, err := DecodeArgs(raw)
	if err != nil {
		return Request{Cmd: cmd, Raw: raw, Args: args}, err
	}
	return Request{Cmd: cmd, Args: args, Raw: raw}, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// DecodeArgs decodes "a=1&b=x+y". It mirrors decode_url_args: empty pairs
// (and the pair "0", which Perl finds false) are skipped, a value ends at the
// next '=', and a repeated name appends "\0"+value to a non-empty earlier
// value. On a bad %-escape it returns what it decoded so far (callid
// included, so the error reply can carry it) and ErrBadEncoding.
func DecodeArgs(s string) (Args, error) {
	out := Args{}
	var firstErr error
	for _, pair := range strings.Split(s, "&") {
		if pair == "" || pair == "0" {
			continue
		}
		fields := strings.Split(pair, "=")
		name := fields[0]
		value := ""
		if len(fields) > 1 {
			value = fields[1]
		}
		dn, err1 := unescape(name)
		dv, err2 := unescape(value)
		if err := errors.Join(err1, err2); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%w in %q", ErrBadEncoding, pair)
			}
			continue
		}
		if prev, ok := out[dn]; ok && prev != "" && prev != "0" {
			out[dn] = prev + "\x00" + dv
		} else {
			out[dn] = prev + dv
		}
	}
	return out, firstErr
}

func unescape(s string) (string, error) {
	u, ok := wire.Unescape(s)
	if !ok {
		return "", ErrBadEncoding
	}
	return u, nil
}

// Escape is MogileFS::Util::eurl: letters, digits and "_,-./\: " pass
// (space becomes '+'); every other byte becomes %XX in upper case.
func Escape(s string) string { return wire.Escape(s) }

// Reply is an ordered set of reply arguments, what a query command
// answers (query.Reply).
type Reply = query.Reply

// okLine renders "OK args", adding callid as ok_line does.
func okLine(r *Reply, callid *string) string {
	if r == nil {
		r = &Reply{}
	}
	if callid != nil {
		r.Set("callid", *callid)
	}
	return "OK " + r.Encode() + "\r\n"
}

// errLine renders "ERR code text[ callid]" as err_line does; text defaults
// to the original's message for code, or code itself.
func errLine(code, text string, callid *string) string {
	if text == "" {
		text = errText[code]
		if text == "" {
			text = code
		}
	}
	s := "ERR " + code + " " + Escape(text)
	if callid != nil {
		s += " " + Escape(*callid)
	}
	return s + "\r\n"
}

// errText holds the original's default texts (Worker::Query err_line).
var errText = map[string]string{
	"dup":                   "Duplicate name/number used.",
	"after_mismatch":        "Pattern does not match the after-value?",
	"bad_params":            "Invalid parameters to command; please see documentation",
	"class_exists":          "That class already exists in that domain",
	"class_has_files":       "Class still has files, unable to delete",
	"class_not_found":       "Class not found",
	"db":                    "Database error",
	"domain_has_files":      "Domain still has files, unable to delete",
	"domain_exists":         "That domain already exists",
	"domain_not_empty":      "Domain still has classes, unable to delete",
	"domain_not_found":      "Domain not found",
	"failure":               "Operation failed",
	"host_exists":           "That host already exists",
	"host_mismatch":         "The device specified doesn't belong to the host specified",
	"host_not_empty":        "Unable to delete host; it contains devices still",
	"host_not_found":        "Host not found",
	"invalid_checker_level": "Checker level invalid.  Please see documentation on this command.",
	"invalid_mindevcount":   "The mindevcount must be at least 1",
	"key_exists":            "Target key name already exists; can't overwrite.",
	"no_class":              "No class provided",
	"no_devices":            "No devices found to store file",
	"no_device":             "Device not found",
	"no_domain":             "No domain provided",
	"no_host":               "No host provided",
	"no_ip":                 "IP required to create host",
	"no_port":               "Port required to create host",
	"no_temp_file":          "No tempfile or file already closed",
	"none_match":            "No keys match that pattern and after-value (if any).",
	"plugin_aborted":        "Action aborted by plugin",
	"state_too_high":        "Status cannot go from dead to alive; must use down",
	"unknown_command":       "Unknown server command",
	"unknown_host":          "Host not found",
	"unknown_state":         "Invalid/unknown state",
	"unreg_domain":          "Domain name invalid/not found",
	"rebal_not_started":     "Rebalance not running",
	"no_rebal_state":        "No available rebalance status",
	"no_rebal_policy":       "No rebalance policy available",
	"nodel_default_class":   "Cannot delete the default class",
}
