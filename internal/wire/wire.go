// Package wire is the MogileFS line protocol's URL escaping, in one place:
// the tracker decodes requests and encodes replies with it, the client the
// other way round. It is MogileFS::Util's eurl and decode_url_args'
// unescaping.
package wire

import "strings"

// safe reports whether b passes through Escape unchanged: letters, digits
// and "_,-./\:". Everything else, '+', '=', '&' and every non-ASCII byte
// included, is sent as %XX, so a value can never split an argument, a pair
// or the line.
func safe(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte(`_,-./\:`, b) >= 0
}

// Escape is eurl: space becomes '+', bytes outside the safe set %XX with
// upper-case hex.
func Escape(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !safe(s[i]) && s[i] != ' ' {
			n++
		}
	}
	if n == 0 {
		return strings.ReplaceAll(s, " ", "+")
	}
	const hex = "0123456789ABCDEF"
	var sb strings.Builder
	sb.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ':
			sb.WriteByte('+')
		case safe(c):
			sb.WriteByte(c)
		default:
			sb.WriteByte('%')
			sb.WriteByte(hex[c>>4])
			sb.WriteByte(hex[c&15])
		}
	}
	return sb.String()
}

// Unescape reverses Escape: '+' is a space, %XX (either case) the byte.
// A '%' not followed by two hex digits is kept as it is, and ok is then
// false: the tracker refuses such a request (ERR bad encoding), while the
// client keeps the literal text of a reply from an old or hand-written
// peer rather than failing it.
func Unescape(s string) (out string, ok bool) {
	if strings.IndexByte(s, '%') < 0 && strings.IndexByte(s, '+') < 0 {
		return s, true
	}
	ok = true
	var sb strings.Builder
	sb.Grow(len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			sb.WriteByte(' ')
		case '%':
			if i+2 < len(s) {
				hi, ok1 := unhex(s[i+1])
				lo, ok2 := unhex(s[i+2])
				if ok1 && ok2 {
					sb.WriteByte(hi<<4 | lo)
					i += 2
					continue
				}
			}
			ok = false
			sb.WriteByte(c)
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String(), ok
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
