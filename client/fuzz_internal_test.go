package client

import (
	"testing"
	"time"
)

// A hostile tracker's create_open reply with a huge dev_count must not
// hang the client.
func TestParseDests_HugeCount(t *testing.T) {
	v, err := ParseReply("OK dev_count=2000000000&devid_1=1&path_1=http://h/dev1/x.fid\r\n")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []dest, 1)
	go func() { done <- parseDests(v) }()
	select {
	case d := <-done:
		if len(d) != 1 || d[0].path != "http://h/dev1/x.fid" {
			t.Errorf("parseDests = %v", d)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("parseDests still running after 2s on dev_count=2000000000")
	}
}

// FuzzReplyDecoders: whatever a tracker answers, the client's decoders
// of its replies finish promptly and yield no more items than the reply
// has fields.
func FuzzReplyDecoders(f *testing.F) {
	for _, s := range []string{
		"OK dev_count=2&devid_1=1&path_1=http://a/dev1/x&devid_2=2&path_2=http://b/dev2/x\r\n",
		"OK fid=1&devid=1&path=http://a/dev1/x\r\n", "OK dev_count=999999999999\r\n", "OK dev_count=-5&path=x\r\n",
		"OK paths=3&path1=a\r\n", "ERR x y\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		v, err := ParseReply(line)
		if err != nil {
			return
		}
		if d := parseDests(v); len(d) > len(v) {
			t.Fatalf("parseDests(%q): %d destinations from %d fields", line, len(d), len(v))
		}
		for _, k := range []string{"dev_count", "paths", "domains", "hosts", "devices", "key_count", "fid_count"} {
			if n, err := count(v, k); err == nil && n > len(v) {
				t.Fatalf("count(%q, %s) = %d from %d fields", line, k, n, len(v))
			}
		}
	})
}
