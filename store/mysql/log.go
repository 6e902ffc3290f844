package mysql

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// driverLogger routes the go-sql-driver/mysql log (its own stderr logger
// by default: "[mysql] 2026/12/01 packets.go:58 unexpected EOF") into
// slog.Default, the daemon's structured log, as one warning per line with
// component=mysql-driver. The driver logs only connection trouble it then
// retries or reports as an error, so warn is its level.
type driverLogger struct{}

func (driverLogger) Print(v ...any) {
	msg := strings.TrimSpace(fmt.Sprint(v...))
	slog.Default().Log(context.Background(), slog.LevelWarn, msg, "component", "mysql-driver")
}
