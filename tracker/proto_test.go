package tracker_test

import (
	"errors"
	model "github.com/gomogile/gomogile/tracker/internal/cluster"
	"reflect"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/tracker"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		line string
		want tracker.Request
		err  error
	}{
		{"noop", tracker.Request{Cmd: "noop", Args: tracker.Args{}}, nil},
		{"GET_PATHS domain=d&key=a+b%2Fc", tracker.Request{Cmd: "get_paths", Raw: "domain=d&key=a+b%2Fc", Args: tracker.Args{"domain": "d", "key": "a b/c"}}, nil},
		{"  noop\r", tracker.Request{Cmd: "noop", Args: tracker.Args{}}, nil},
		// decode_url_args: empty and "0" pairs skipped, value ends at the next '='.
		{"x a=1&&0&b=2=3&c", tracker.Request{Cmd: "x", Raw: "a=1&&0&b=2=3&c", Args: tracker.Args{"a": "1", "b": "2", "c": ""}}, nil},
		// A repeated name joins non-empty values with NUL.
		{"x a=1&a=2", tracker.Request{Cmd: "x", Raw: "a=1&a=2", Args: tracker.Args{"a": "1\x002"}}, nil},
		{"!want 3 replicate", tracker.Request{Admin: true, Cmd: "want", Raw: "3 replicate"}, nil},
		{"!version", tracker.Request{Admin: true, Cmd: "version"}, nil},
		{"", tracker.Request{}, tracker.ErrEmptyLine},
		{"  ", tracker.Request{}, tracker.ErrBadCommand},
		{"!", tracker.Request{}, tracker.ErrBadCommand},
		{"-x", tracker.Request{}, tracker.ErrBadCommand},
	} {
		got, err := tracker.ParseRequest(tc.line)
		if !errors.Is(err, tc.err) {
			t.Errorf("ParseRequest(%q) error %v; want %v", tc.line, err, tc.err)
			continue
		}
		if err == nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseRequest(%q) = %+v; want %+v", tc.line, got, tc.want)
		}
	}
	if _, err := tracker.ParseRequest("x a=%zz"); !errors.Is(err, tracker.ErrBadEncoding) {
		t.Errorf("bad escape: %v", err)
	}
	if _, err := tracker.ParseRequest("x a=" + strings.Repeat("y", tracker.MaxLineBytes)); !errors.Is(err, tracker.ErrLineTooLong) {
		t.Errorf("long line: %v", err)
	}
}

func TestEscape(t *testing.T) {
	// MogileFS::Util::eurl keeps [A-Za-z0-9_,-./\: ] and turns space into +.
	for in, want := range map[string]string{
		"abc_XYZ-09,./\\:": "abc_XYZ-09,./\\:",
		"a b":              "a+b",
		"a+b&c=d%":         "a%2Bb%26c%3Dd%25",
		"\x00\xff":         "%00%FF",
		"ключ":             "%D0%BA%D0%BB%D1%8E%D1%87",
	} {
		if got := tracker.Escape(in); got != want {
			t.Errorf("Escape(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestFidPath(t *testing.T) {
	for _, tc := range []struct {
		devid int
		fid   int64
		want  string
	}{
		{1, 1, "/dev1/0/000/000/0000000001.fid"},
		{12, 1234567890, "/dev12/1/234/567/1234567890.fid"},
		{3, 98765, "/dev3/0/000/098/0000098765.fid"},
		{4, 12345678901, "/dev4/1/234/567/12345678901.fid"},
	} {
		if got := model.FidPath(tc.devid, tc.fid); got != tc.want {
			t.Errorf("FidPath(%d, %d) = %q; want %q", tc.devid, tc.fid, got, tc.want)
		}
	}
}

// FuzzParseRequest: no input crashes the parser; every argument it returns
// re-encodes (Escape) and re-parses to itself.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		"noop", "get_paths domain=d&key=a+b%2Fc&noverify=1", "!want 3 replicate", "x a=1&a=2&&0&b=c=d",
		"create_close domain=d&fid=1&devid=1&path=http%3A%2F%2F127.0.0.1%3A7500%2Fdev1%2F0%2F000%2F000%2F0000000001.fid",
		"x a=%", "x a=%4", "x %41=%42", "\r", "!", "  ", "\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		req, err := tracker.ParseRequest(line)
		if err != nil || req.Admin {
			return
		}
		if req.Cmd == "" {
			t.Fatalf("ParseRequest(%q): empty command without error", line)
		}
		// Round trip the arguments through the reply encoder.
		var parts []string
		for k, v := range req.Args {
			if strings.Contains(v, "\x00") || k == "" || k == "0" {
				continue
			}
			parts = append(parts, tracker.Escape(k)+"="+tracker.Escape(v))
		}
		again, err := tracker.ParseRequest("x " + strings.Join(parts, "&"))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", parts, err)
		}
		for k, v := range req.Args {
			if strings.Contains(v, "\x00") || k == "" || k == "0" {
				continue
			}
			if again.Args[k] != v && !(v == "" && again.Args[k] == "") {
				t.Fatalf("arg %q: %q became %q", k, v, again.Args[k])
			}
		}
	})
}
