package sqlstore

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gomogile/gomogile/store"
)

// nextTry is the nexttry of a row due after d from now (database clock):
// what nextTryExpr computes in SQL, the model its test checks against.
func nextTry(now int64, d time.Duration) int64 {
	return min(now+nextTryDelay(d), endOfTime)
}

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"a", "b"},
		{"a%", "a&"},
		{"é", "ê"},
		{"\u00ff", "\u0100"},
		{"a\U0010FFFF", "b"},
		{"\U0010FFFF", ""},
		{"\U0010FFFF\U0010FFFF", ""},
		{"x\ud7ff", "x\ue000"},
		{"日本", "日札"},
	} {
		if got := prefixEnd(c.in); got != c.want {
			t.Errorf("prefixEnd(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

// Every string with the prefix sorts in [prefix, prefixEnd), and the bound
// is valid UTF-8 (PostgreSQL refuses anything else as text).
func TestPrefixEnd_Bounds(t *testing.T) {
	samples := []string{"", "a", "a\x7f", "az", "é", "é\U0010FFFF", "ê", "\ud7ff", "\ue000", "\U0010FFFF", "日本語", "b"}
	for _, p := range samples {
		end := prefixEnd(p)
		if !utf8.ValidString(end) {
			t.Errorf("prefixEnd(%q) = %q; want valid UTF-8", p, end)
		}
		for _, s := range samples {
			in := s >= p && (end == "" || s < end)
			if has := strings.HasPrefix(s, p); in != has {
				t.Errorf("prefix %q, key %q: in range [%q, %q) = %v; want %v", p, s, p, end, in, has)
			}
		}
	}
}

func TestNextTry(t *testing.T) {
	const now = 1_700_000_000
	for _, c := range []struct {
		d    time.Duration
		want int64
	}{
		{0, now},
		{time.Millisecond, now + 1},
		{time.Second, now + 1},
		{1500 * time.Millisecond, now + 2},
		{time.Hour, now + 3600},
		{store.Never, endOfTime},
		{1 << 62, endOfTime},
	} {
		if got := nextTry(now, c.d); got != c.want {
			t.Errorf("nextTry(%d, %v) = %d; want %d", now, c.d, got, c.want)
		}
	}
}
