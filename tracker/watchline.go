package tracker

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// watchLine is how a log record reads on a "!watch" stream: the original's
// ":: " prefix, then, for a worker's record, "[<job>(<pid>)] " as the
// original's parent prefixed a child's error, then the message, then any
// attributes as key=value (the job and component attributes say who logged
// it and are not repeated). A worker process's records carry its "pid";
// a goroutine worker has none, and the tracker's own pid stands in, as in
// "!jobs".
func watchLine(msg string, attrs []slog.Attr) string {
	var b strings.Builder
	b.WriteString(":: ")
	pid := os.Getpid()
	for _, a := range attrs {
		if a.Key == "pid" && a.Value.Kind() == slog.KindInt64 {
			pid = int(a.Value.Int64())
		}
	}
	for _, a := range attrs {
		if a.Key == "job" {
			fmt.Fprintf(&b, "[%s(%d)] ", a.Value, pid)
			break
		}
	}
	b.WriteString(msg)
	for _, a := range attrs {
		switch a.Key {
		case "job", "component", "pid":
			continue
		}
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	return b.String()
}
