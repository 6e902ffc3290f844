package mogstored

import (
	"strings"
	"testing"
)

func TestMountFromInfo(t *testing.T) {
	info := `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 8:17 / /var/mogdata/dev1 rw,noatime shared:5 - xfs /dev/sdb1 rw
31 22 8:33 / /var/mog\040data rw shared:6 - xfs /dev/sdc1 rw
`
	for _, c := range []struct{ path, dev, mount string }{
		{"/var/mogdata/dev1", "/dev/sdb1", "/var/mogdata/dev1"},
		{"/var/mogdata/dev1/0/000", "/dev/sdb1", "/var/mogdata/dev1"},
		{"/var/mogdata/dev2", "/dev/sda1", "/"},
		{"/var/mogdata/dev10", "/dev/sda1", "/"},
		{"/var/mog data/dev3", "/dev/sdc1", "/var/mog data"},
	} {
		dev, mount := mountFromInfo(strings.NewReader(info), c.path)
		if dev != c.dev || mount != c.mount {
			t.Errorf("%s: got %q on %q, want %q on %q", c.path, dev, mount, c.dev, c.mount)
		}
	}
}
