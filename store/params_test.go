package store_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gomogile/gomogile/store"
)

// settings is a backend's parameters as ApplyParams fills them.
type settings struct {
	mode    string
	timeout time.Duration
	pages   int
	utf8    bool
}

func (s *settings) params() []store.Param {
	return []store.Param{
		{Names: []string{"tls", "mysql_ssl"}, Set: store.ChoiceParam(&s.mode, map[string]string{"true": "true", "1": "true", "0": "false"})},
		{Names: []string{"timeout", "mysql_connect_timeout"}, Set: store.SecondsParam(&s.timeout, true)},
		{Names: []string{"max_page_count"}, Set: store.IntParam(&s.pages, 1)},
		{Names: []string{"mysql_enable_utf8"}, Set: store.BoolParam(&s.utf8)},
	}
}

func TestApplyParams(t *testing.T) {
	for query, want := range map[string]settings{
		"":                                      {},
		"tls=TRUE&timeout=1.5s":                 {mode: "true", timeout: 1500 * time.Millisecond},
		"mysql_ssl=1&MYSQL_CONNECT_TIMEOUT=7":   {mode: "true", timeout: 7 * time.Second},
		"Max_Page_Count=10&mysql_enable_utf8=1": {pages: 10, utf8: true},
		"mysql_enable_utf8=false":               {},
	} {
		q, err := url.ParseQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		var got settings
		if err := (&store.DSN{Params: q}).ApplyParams("test", got.params()...); err != nil {
			t.Errorf("ApplyParams(%q): %v", query, err)
			continue
		}
		if got != want {
			t.Errorf("ApplyParams(%q) = %+v; want %+v", query, got, want)
		}
	}
}

// Every refusal is ErrBadDSN and names the backend and what is wrong, in
// the same words whatever order the map gives the parameters in.
func TestApplyParams_Refuses(t *testing.T) {
	for query, msg := range map[string]string{
		"charset=latin1":                    `test: unknown parameter "charset" (known: max_page_count, mysql_enable_utf8, timeout, tls)`,
		"timeout=1&timeout=2":               `parameter "timeout" given more than once`,
		"timeout=1&mysql_connect_timeout=2": `parameter "timeout" given more than once (as "mysql_connect_timeout" and "timeout")`,
		"tls=maybe":                         `parameter tls="maybe": want one of 0, 1, true`,
		"timeout=0":                         `parameter timeout="0": not positive`,
		"timeout=-1s":                       `parameter timeout="-1s": "-1s" is negative`,
		"timeout=soon":                      `is neither a duration nor whole seconds`,
		"max_page_count=0":                  `parameter max_page_count="0": below 1`,
		"max_page_count=ten":                `not an integer`,
		"mysql_enable_utf8=yes":             `want 0 or 1`,
		"a=1&b=2":                           `unknown parameter "a"`,
	} {
		q, err := url.ParseQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			var s settings
			err := (&store.DSN{Params: q}).ApplyParams("test", s.params()...)
			if !errors.Is(err, store.ErrBadDSN) || !strings.Contains(err.Error(), msg) {
				t.Errorf("ApplyParams(%q) = %v; want ErrBadDSN saying %s", query, err, msg)
				break
			}
		}
	}
}
