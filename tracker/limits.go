package tracker

import (
	"errors"
	"os"
	"strconv"
	"strings"
)

// numArg is perlNum for arguments whose value matters beyond its sign: it
// also reports whether the leading digits fit an int64. perlNum turns an
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

// isTimeout reports a deadline that passed (as opposed to a closed or reset
// connection).
func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
