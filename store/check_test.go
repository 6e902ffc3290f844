package store

import (
	"strings"
	"testing"
)

func TestCheckText(t *testing.T) {
	for _, c := range []struct {
		v    string
		ok   bool
		max  int
		need bool
	}{
		{"k", true, 255, true},
		{"", false, 255, true},
		{"", true, 255, false},
		{strings.Repeat("x", 255), true, 255, true},
		{strings.Repeat("x", 256), false, 255, true},
		{strings.Repeat("é", 128), false, 255, true},
		{"a\x00b", false, 255, true},
		{"\xff", false, 255, true},
	} {
		err := checkText("key", c.v, c.max, c.need)
		if (err == nil) != c.ok {
			t.Errorf("checkText(%q) = %v; want ok=%v", c.v, err, c.ok)
		}
	}
}
