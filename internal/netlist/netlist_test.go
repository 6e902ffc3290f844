package netlist_test

import (
	"net/netip"
	"testing"

	"github.com/gomogile/gomogile/internal/netlist"
)

func TestParse(t *testing.T) {
	nets, err := netlist.Parse(" 127.0.0.1, 10.1.2.3/8 ,::1,, ")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1/32", "10.0.0.0/8", "::1/128"}
	if len(nets) != len(want) {
		t.Fatalf("got %v; want %v", nets, want)
	}
	for i, w := range want {
		if nets[i].String() != w {
			t.Errorf("net %d: got %v; want %v", i, nets[i], w)
		}
	}
	if nets, err := netlist.Parse(""); err != nil || nets != nil {
		t.Errorf("empty: got %v, %v; want nil, nil", nets, err)
	}
	if _, err := netlist.Parse("127.0.0.1, example.com"); err == nil {
		t.Error("a host name was accepted")
	}
}

func TestAllows(t *testing.T) {
	nets, _ := netlist.Parse("10.0.0.0/8, ::1")
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"10.9.8.7", true}, {"::ffff:10.9.8.7", true}, {"::1", true}, {"11.0.0.1", false}, {"", false},
	} {
		var a netip.Addr
		if c.addr != "" {
			a = netip.MustParseAddr(c.addr)
		}
		if got := netlist.Allows(nets, a); got != c.want {
			t.Errorf("Allows(%q) = %v; want %v", c.addr, got, c.want)
		}
	}
	if !netlist.Allows(nil, netip.Addr{}) {
		t.Error("no nets must allow everyone")
	}
}
