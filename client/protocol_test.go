package client_test

import (
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/client"
)

func TestEscape(t *testing.T) {
	// Expected outputs written by hand from MogileFS::Util::eurl: the safe
	// set is [a-zA-Z0-9_,\-./\\: ], space turns into '+', the rest %XX
	// upper case, byte by byte.
	cases := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{"a b", "a+b"},
		{"a+b", "a%2Bb"},
		{"k=v&x", "k%3Dv%26x"},
		{"http://10.0.0.1:7500/dev1/0/000/000/0000000042.fid", "http://10.0.0.1:7500/dev1/0/000/000/0000000042.fid"},
		{`a,b-c_d.e\f`, `a,b-c_d.e\f`},
		{"é", "%C3%A9"},
		{"100%", "100%25"},
		{"line\r\nbreak", "line%0D%0Abreak"},
		{"MultipleHosts(2)", "MultipleHosts%282%29"},
		{"~*?", "%7E%2A%3F"},
	}
	for _, c := range cases {
		if got := client.Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q; want %q", c.in, got, c.want)
		}
		if got := client.Unescape(c.want); got != c.in {
			t.Errorf("Unescape(%q) = %q; want %q", c.want, got, c.in)
		}
	}
}

func TestUnescape_Lenient(t *testing.T) {
	// decode_url_args only decodes %XX with two hex digits and leaves
	// anything else alone.
	cases := []struct{ in, want string }{
		{"%", "%"},
		{"%4", "%4"},
		{"%zz1", "%zz1"},
		{"%41%4a%4A", "AJJ"},
		{"a+%2B", "a +"},
	}
	for _, c := range cases {
		if got := client.Unescape(c.in); got != c.want {
			t.Errorf("Unescape(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

func TestEncodeArgs(t *testing.T) {
	v := url.Values{
		"domain": {"my domain"},
		"key":    {"a&b=c+d/é"},
		"class":  {""},
	}
	got := client.EncodeArgs(v)
	want := "class=&domain=my+domain&key=a%26b%3Dc%2Bd/%C3%A9"
	if got != want {
		t.Fatalf("EncodeArgs = %q; want %q", got, want)
	}
	if back := client.DecodeArgs(got); !reflect.DeepEqual(back, v) {
		t.Fatalf("DecodeArgs(EncodeArgs(v)) = %v; want %v", back, v)
	}
	if got := client.EncodeArgs(nil); got != "" {
		t.Fatalf("EncodeArgs(nil) = %q; want empty", got)
	}
}

func TestEncodeArgs_RoundTrip(t *testing.T) {
	values := []string{"", " ", "+", "%", "%%41", "=", "&", "&&==", "a b+c", "\x00\xff", "日本語", "\r\n", "x=y&z=w", strings.Repeat("k", 300)}
	for _, s := range values {
		v := url.Values{s + "k": {s}}
		back := client.DecodeArgs(client.EncodeArgs(v))
		if !reflect.DeepEqual(back, v) {
			t.Errorf("round trip of %q: got %v; want %v", s, back, v)
		}
		if enc := client.EncodeArgs(v); strings.ContainsAny(enc, " \r\n") {
			t.Errorf("encoding of %q contains a separator: %q", s, enc)
		}
	}
}

func TestDecodeArgs(t *testing.T) {
	got := client.DecodeArgs("&a=1&&b=&c&d=x%3Dy&e=p+q")
	want := url.Values{"a": {"1"}, "b": {""}, "c": {""}, "d": {"x=y"}, "e": {"p q"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeArgs = %v; want %v", got, want)
	}
}

func TestParseReply(t *testing.T) {
	// ok_line: "OK " followed by eurl'd pairs, possibly none.
	for _, c := range []struct {
		line string
		want url.Values
	}{
		{"OK \r\n", url.Values{}},
		{"OK\r\n", url.Values{}},
		{"OK", url.Values{}},
		{"OK fid=42&devid=3&path=http://h:7500/dev3/0/000/000/0000000042.fid\r\n",
			url.Values{"fid": {"42"}, "devid": {"3"}, "path": {"http://h:7500/dev3/0/000/000/0000000042.fid"}}},
		// MogileFS::Client skips a leading number (very old trackers).
		{"OK 0 paths=0\r\n", url.Values{"paths": {"0"}}},
		{"OK key=a+b%26c&value=\n", url.Values{"key": {"a b&c"}, "value": {""}}},
	} {
		got, err := client.ParseReply(c.line)
		if err != nil {
			t.Errorf("ParseReply(%q): %v", c.line, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseReply(%q) = %v; want %v", c.line, got, c.want)
		}
	}
}

func TestParseReply_Err(t *testing.T) {
	for _, c := range []struct {
		line, code, msg string
		is              error
	}{
		// Verbatim from MogileFS-Server t/00-startup.t.
		{"ERR no_domain No+domain+provided\r\n", "no_domain", "No domain provided", client.ErrNoDomain},
		{"ERR unknown_key unknown_key\r\n", "unknown_key", "unknown_key", client.ErrUnknownKey},
		// err_line appends the eurl'd callid when the request had one.
		{"ERR none_match No+keys+match+that+pattern+and+after-value+%28if+any%29. 17\r\n", "none_match", "No keys match that pattern and after-value (if any).", client.ErrNoneMatch},
		{"ERR size_mismatch Expected%3A+5%3B+actual%3A+4%3B+path%3A+http://h/x\r\n", "size_mismatch", "Expected: 5; actual: 4; path: http://h/x", client.ErrSizeMismatch},
		{"ERR dup\r\n", "dup", "", client.ErrDup},
	} {
		_, err := client.ParseReply(c.line)
		var e *client.Error
		if !errors.As(err, &e) {
			t.Errorf("ParseReply(%q) error %v is not a *client.Error", c.line, err)
			continue
		}
		if e.Code != c.code || e.Message != c.msg {
			t.Errorf("ParseReply(%q) = {%q, %q}; want {%q, %q}", c.line, e.Code, e.Message, c.code, c.msg)
		}
		if !errors.Is(err, c.is) {
			t.Errorf("errors.Is(%v, %v) = false", err, c.is)
		}
		if errors.Is(err, client.ErrFailure) {
			t.Errorf("errors.Is(%v, ErrFailure) = true; codes must differ", err)
		}
	}
}

func TestParseReply_Garbage(t *testing.T) {
	for _, line := range []string{"", "\r\n", "HTTP/1.0 400 Bad Request\r\n", "ERR\r\n", "ERR \r\n", "ok a=b\r\n", "OK a=b c=d\r\n"} {
		_, err := client.ParseReply(line)
		if !errors.Is(err, client.ErrProtocol) {
			t.Errorf("ParseReply(%q) error = %v; want ErrProtocol", line, err)
		}
	}
}

func FuzzParseReply(f *testing.F) {
	for _, s := range []string{
		"OK \r\n",
		"OK fid=42&dev_count=2&devid_1=1&path_1=http://h:7500/dev1/0/000/000/0000000042.fid\r\n",
		"OK domains=1&domain1=testdom&domain1classes=1&domain1class1name=default&domain1class1mindevcount=2&domain1class1replpolicy=MultipleHosts%28%29&domain1class1hashtype=NONE\r\n",
		"ERR no_domain No+domain+provided\r\n",
		"ERR unknown_key unknown_key 12\r\n",
		"OK 0 a=%zz&b=%4\r\n",
		"OK &&=&==\r\n",
		"garbage",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		v, err := client.ParseReply(line)
		if err != nil {
			var e *client.Error
			if !errors.As(err, &e) && !errors.Is(err, client.ErrProtocol) {
				t.Fatalf("ParseReply(%q): unexpected error kind %v", line, err)
			}
			if v != nil {
				t.Fatalf("ParseReply(%q): values %v with error", line, v)
			}
			return
		}
		if v == nil {
			t.Fatalf("ParseReply(%q): nil values without error", line)
		}
		// Whatever was accepted survives re-encoding unchanged: the
		// client's own replies to itself (and our tracker's) are
		// lossless.
		again, err := client.ParseReply("OK " + client.EncodeArgs(v) + "\r\n")
		if err != nil {
			t.Fatalf("re-parse of %v: %v", v, err)
		}
		if !sameValues(again, v) {
			t.Fatalf("re-parse of %q: got %v; want %v", line, again, v)
		}
	})
}

// sameValues compares as multisets per key: EncodeArgs sorts keys but
// keeps the order of repeated values.
func sameValues(a, b url.Values) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		if !reflect.DeepEqual(av, b[k]) {
			return false
		}
	}
	return true
}
