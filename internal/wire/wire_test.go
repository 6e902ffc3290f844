package wire

import "testing"

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"":                "",
		"plain_key-1.txt": "plain_key-1.txt",
		"a b":             "a+b",
		`C:\dir/x,y:z`:    `C:\dir/x,y:z`,
		"k=v&x+y%":        "k%3Dv%26x%2By%25",
		"é\x00\n":         "%C3%A9%00%0A",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestUnescape(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{"a+b", "a b", true},
		{"%c3%A9", "é", true},
		{"100%", "100%", false},
		{"%zz1", "%zz1", false},
		{"%4", "%4", false},
		{"x%41%", "xA%", false},
	} {
		if got, ok := Unescape(c.in); got != c.want || ok != c.ok {
			t.Errorf("Unescape(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// Whatever the bytes, Unescape undoes Escape, and what Escape writes is
// only safe bytes, '+' and %XX.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"", "a b", "k=v&x", "é%+", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := Escape(s)
		for i := 0; i < len(e); i++ {
			if c := e[i]; !safe(c) && c != '+' && c != '%' {
				t.Fatalf("Escape(%q) = %q holds %q", s, e, c)
			}
		}
		if got, ok := Unescape(e); got != s || !ok {
			t.Fatalf("Unescape(Escape(%q)) = %q, %v", s, got, ok)
		}
	})
}
