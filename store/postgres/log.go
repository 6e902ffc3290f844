package postgres

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pgx prints nothing by itself; what it can tell — the server's notices
// and, when debugging, each query — goes to slog.Default, the daemon's
// structured log, with component=pgx.

// logNotice logs a server NOTICE or WARNING (a dropped one would be lost:
// pgx discards notices without a handler). Warnings are warnings; notices
// such as "relation already exists, skipping" from the idempotent schema
// setup are debug.
func logNotice(_ *pgconn.PgConn, n *pgconn.Notice) {
	level := slog.LevelDebug
	if n.Severity == "WARNING" {
		level = slog.LevelWarn
	}
	slog.Default().Log(context.Background(), level, n.Message, "component", "pgx", "severity", n.Severity, "code", n.Code)
}

// queryTracer logs each query with its duration and error at debug level,
// and costs one Enabled check per query otherwise. Errors are debug too:
// they are returned to the caller, which reports them once.
type queryTracer struct{}

type traceKey struct{}

type traceStart struct {
	sql   string
	start time.Time
}

func (queryTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !slog.Default().Enabled(ctx, slog.LevelDebug) {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, traceStart{sql: d.SQL, start: time.Now()})
}

func (queryTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	ts, ok := ctx.Value(traceKey{}).(traceStart)
	if !ok {
		return
	}
	attrs := []any{"component", "pgx", "sql", ts.sql, "duration", time.Since(ts.start), "tag", d.CommandTag.String()}
	if d.Err != nil {
		attrs = append(attrs, "err", d.Err)
	}
	slog.Default().Log(ctx, slog.LevelDebug, "query", attrs...)
}
