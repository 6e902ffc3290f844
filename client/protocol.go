package client

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/gomogile/gomogile/internal/wire"
)

// Escape encodes s the way the tracker encodes reply values (MogileFS's
// eurl): space becomes '+', bytes other than letters, digits and
// "_,-./\:" become %XX with upper-case hex.
func Escape(s string) string { return wire.Escape(s) }

// Unescape reverses Escape. Like the tracker's decode_url_args it is
// lenient: a '%' not followed by two hex digits is kept as it is rather
// than failing the whole reply, because old servers and hand-written peers
// do send such bytes and the caller is better served by the literal text.
func Unescape(s string) string {
	u, _ := wire.Unescape(s)
	return u
}

// EncodeArgs renders args as the tracker expects them after the command
// name: "k1=v1&k2=v2", keys sorted so that request lines are reproducible.
// A key with several values is sent once per value (the original server
// joins repeats with NUL; no command relies on it).
func EncodeArgs(args url.Values) string {
	if len(args) == 0 {
		return ""
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		ek := Escape(k)
		vs := args[k]
		if len(vs) == 0 {
			vs = []string{""}
		}
		for _, v := range vs {
			if sb.Len() > 0 {
				sb.WriteByte('&')
			}
			sb.WriteString(ek)
			sb.WriteByte('=')
			sb.WriteString(Escape(v))
		}
	}
	return sb.String()
}

// DecodeArgs parses "k1=v1&k2=v2" as the tracker does: empty pairs are
// skipped, a pair without '=' has an empty value, and the value runs to the
// end of the pair (an unescaped '=' in it is kept, which is more forgiving
// than the Perl split and loses nothing).
func DecodeArgs(s string) url.Values {
	v := url.Values{}
	for pair := range strings.SplitSeq(s, "&") {
		if pair == "" {
			continue
		}
		k, val, _ := strings.Cut(pair, "=")
		v.Add(Unescape(k), Unescape(val))
	}
	return v
}

// ParseReply parses one reply line from a tracker, with or without its
// trailing CRLF.
//
// "OK <args>" yields the decoded arguments (never nil). "ERR <code>
// <message> [<callid>]" yields a *Error; the message is unescaped and, as
// in Query.pm's err_line, may be absent. Anything else is an error wrapping
// ErrProtocol: the connection is out of step and must not be reused.
func ParseReply(line string) (url.Values, error) {
	line = strings.TrimSuffix(line, "\n")
	line = strings.TrimSuffix(line, "\r")
	word, rest, _ := strings.Cut(line, " ")
	switch word {
	case "OK":
		rest = strings.TrimSpace(rest)
		// Very old trackers put a number before the arguments
		// ("OK 0 a=b"); the Perl client skips it, so do we. Arguments
		// themselves never contain a space: it is sent as '+'.
		if num, args, ok := strings.Cut(rest, " "); ok && isDigits(num) {
			rest = strings.TrimSpace(args)
		}
		if strings.ContainsAny(rest, " \t\r\n") {
			return nil, fmt.Errorf("%w: malformed OK reply %q", ErrProtocol, truncate(line))
		}
		return DecodeArgs(rest), nil
	case "ERR":
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("%w: ERR reply without code %q", ErrProtocol, truncate(line))
		}
		e := &Error{Code: Unescape(fields[0])}
		if len(fields) > 1 {
			e.Message = Unescape(fields[1])
		}
		return nil, e
	}
	return nil, fmt.Errorf("%w: unexpected reply %q", ErrProtocol, truncate(line))
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// truncate keeps error messages readable when a peer sends megabytes of
// garbage.
func truncate(s string) string {
	const max = 120
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// validCommand mirrors the tracker's /^(\w+)/: anything else would either
// be rejected as unknown_command or, worse, smuggle a second request
// line onto the connection.
func validCommand(cmd string) bool {
	if cmd == "" {
		return false
	}
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// requestLine builds "cmd args\r\n". The space is sent even when there are
// no arguments, as the Perl client does; the server accepts both.
func requestLine(cmd string, args url.Values) string {
	return cmd + " " + EncodeArgs(args) + "\r\n"
}
