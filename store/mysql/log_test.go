package mysql_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/gomogile/gomogile/store"
	"github.com/gomogile/gomogile/store/mysql"
)

// The driver's own log lines ("[mysql] ... packets.go:58 unexpected EOF" on
// stderr by default) go to slog.Default as structured warnings.
func TestDriverLogsThroughSlog(t *testing.T) {
	d, err := store.ParseDSN("mysql://root@127.0.0.1:3306/test")
	if err != nil {
		t.Fatal(err)
	}
	main, _, err := mysql.Configure(d)
	if err != nil {
		t.Fatal(err)
	}
	if main.Logger == nil {
		t.Fatal("the main connector has no logger: the driver would print to stderr")
	}
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(prev)
	main.Logger.Print("packets.go:58 ", "unexpected EOF")
	if got := buf.String(); !strings.Contains(got, "level=WARN") || !strings.Contains(got, "component=mysql-driver") || !strings.Contains(got, "unexpected EOF") {
		t.Errorf("driver log line became %q", got)
	}
}
