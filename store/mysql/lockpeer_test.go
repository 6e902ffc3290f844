package mysql_test

import (
	"bytes"
	"testing"

	"github.com/gomogile/gomogile/store/mysql"
)

func greeting(protocol byte, version string, id uint32) []byte {
	payload := append([]byte{protocol}, version...)
	payload = append(payload, 0, byte(id), byte(id>>8), byte(id>>16), byte(id>>24))
	payload = append(payload, bytes.Repeat([]byte{'s'}, 8)...) // the rest of a real greeting
	return append([]byte{byte(len(payload)), 0, 0, 0}, payload...)
}

func TestSniffGreeting(t *testing.T) {
	g := greeting(10, "8.0.36", 0x01020304)
	if id, ok := mysql.SniffGreeting(g); !ok || id != 0x01020304 {
		t.Errorf("one read: id %#x, %v; want 0x1020304, true", id, ok)
	}
	var bytewise [][]byte
	for i := range g {
		bytewise = append(bytewise, g[i:i+1])
	}
	if id, ok := mysql.SniffGreeting(bytewise...); !ok || id != 0x01020304 {
		t.Errorf("byte by byte: id %#x, %v; want 0x1020304, true", id, ok)
	}
	m := greeting(10, "5.5.5-10.11.19-MariaDB-0+deb12u1", 77)
	if id, ok := mysql.SniffGreeting(m[:9], m[9:]); !ok || id != 77 {
		t.Errorf("MariaDB greeting in two reads: id %d, %v; want 77, true", id, ok)
	}
	if _, ok := mysql.SniffGreeting(greeting(9, "4.0", 5)); ok {
		t.Errorf("protocol 9 greeting registered; want ignored")
	}
	if _, ok := mysql.SniffGreeting(bytes.Repeat([]byte{10}, 600)); ok {
		t.Errorf("greeting without a version terminator registered; want ignored")
	}
}
