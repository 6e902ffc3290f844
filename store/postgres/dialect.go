package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gomogile/gomogile/store/sqlstore"
)

// Dialect is PostgreSQL's sqlstore.Dialect, exported so that a backend for
// a PostgreSQL-like database (CockroachDB, YugabyteDB, a PostgreSQL behind
// another driver) can build on it: embed it and override the methods whose
// SQL differs. Its Schema is Schema17 followed by LockSchema; a backend that
// brings its own locks overrides Schema with Schema17 alone.
type Dialect struct {
	// BackendName is what Name reports (Info.Driver); "" means "postgres".
	BackendName string
}

var _ sqlstore.Dialect = Dialect{}

// Name is BackendName, or "postgres".
func (d Dialect) Name() string {
	if d.BackendName != "" {
		return d.BackendName
	}
	return "postgres"
}

// Rebind numbers '?' placeholders as $1, $2, … Question marks inside string
// literals, quoted identifiers and comments are left alone.
func (Dialect) Rebind(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'' || c == '"':
			j := skipQuoted(query, i)
			b.WriteString(query[i:j])
			i = j - 1
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			j := strings.IndexByte(query[i:], '\n')
			if j < 0 {
				j = len(query) - i
			}
			b.WriteString(query[i : i+j])
			i += j - 1
		case c == '/' && i+1 < len(query) && query[i+1] == '*':
			j := strings.Index(query[i+2:], "*/")
			end := len(query)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			b.WriteString(query[i:end])
			i = end - 1
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// skipQuoted returns the index just past the quoted token starting at i. A
// doubled quote character stands for itself, as in standard SQL strings;
// the shared SQL uses no backslash-escaped strings.
func skipQuoted(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		if s[j] == q {
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

// UnixNow reads statement_timestamp(): unlike now() it is not frozen at the
// start of a long transaction, so a lease written late in a transaction is
// not shortened and a due-time check is not fooled into seeing the past;
// unlike clock_timestamp() it is stable within a statement, so a comparison
// against it can still use an index (nexttry, delafter). FLOOR truncates as
// UNIX_TIMESTAMP() and strftime('%s') do, where a bare cast would round up.
func (Dialect) UnixNow() string {
	return "CAST(FLOOR(EXTRACT(EPOCH FROM statement_timestamp())) AS BIGINT)"
}

// ByteOrder uses the "C" collation, which compares bytes whatever the
// database's locale. New databases declare file.dkey COLLATE "C" so that
// this still walks the (dmid, dkey) index.
func (Dialect) ByteOrder(col string) string { return col + ` COLLATE "C"` }

// Upsert uses ON CONFLICT, with update as the shared layer wrote it: the
// existing row's columns qualified by the table name, which PostgreSQL
// requires (a bare name in DO UPDATE is ambiguous between the existing row
// and EXCLUDED).
func (Dialect) Upsert(table string, cols, key []string, update string) string {
	q := sqlstore.Insert(table, cols) + " ON CONFLICT (" + strings.Join(key, ", ") + ") DO "
	if strings.TrimSpace(update) == "" {
		return q + "NOTHING"
	}
	return q + "UPDATE SET " + update
}

func (Dialect) Excluded(col string) string { return "EXCLUDED." + col }

func (Dialect) Least(a, b string) string { return "LEAST(" + a + ", " + b + ")" }

// Schema is Schema17 followed by LockSchema and sqlstore.DueIndexes.
func (Dialect) Schema() []string { return append(slices.Clip(schema), sqlstore.DueIndexes...) }

func (Dialect) VersionQuery() string { return "SHOW server_version" }

// Classify maps SQLSTATEs and connection failures onto the shared layer's
// error kinds. A failed connect (pgx's *pgconn.ConnectError: refused,
// unreachable, a server starting up or shutting down, a pooler that cannot
// reach its server), a connection pgx found closed before writing to it
// (driver.ErrBadConn, pgconn.SafeToRetry) carried no statement:
// ErrKindUnsent. A login the server refuses (bad password, no such
// database) is ErrOther, not worth retrying.
func (Dialect) Classify(err error) sqlstore.ErrorKind {
	if err == nil {
		return sqlstore.ErrOther
	}
	// A cancelled or expired context is the caller's doing, not a broken
	// connection, even though pgx tears the connection down to honour it.
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return sqlstore.ErrOther
	}
	var pgErr *pgconn.PgError
	isPg := errors.As(err, &pgErr)
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		if isPg && !connectionClass(pgErr.Code) {
			return sqlstore.ErrOther // the server refused the login
		}
		return sqlstore.ErrKindUnsent
	}
	if sqlstore.NotSent(err) || pgconn.SafeToRetry(err) {
		return sqlstore.ErrKindUnsent
	}
	if isPg {
		switch pgErr.Code {
		case "23505": // unique_violation
			return sqlstore.ErrKindDuplicate
		case "40001", // serialization_failure
			"40P01", // deadlock_detected
			"55P03": // lock_not_available
			return sqlstore.ErrKindRetry
		case "53100": // disk_full: a table or the WAL cannot grow
			return sqlstore.ErrKindNoSpace
		}
		if connectionClass(pgErr.Code) {
			return sqlstore.ErrKindConnLost
		}
		return sqlstore.ErrOther
	}
	var netErr net.Error
	switch {
	case errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed),
		errors.Is(err, pgconn.ErrConnClosed),
		errors.As(err, &netErr):
		return sqlstore.ErrKindConnLost
	}
	return sqlstore.ErrOther
}

// connectionClass reports SQLSTATEs that end the session rather than the
// statement: the server or a pooler closing it.
func connectionClass(code string) bool {
	switch code {
	case "57P01", // admin_shutdown: pg_terminate_backend or a fast shutdown
		"57P02", // crash_shutdown
		"57P03": // cannot_connect_now: starting up or shutting down
		return true
	}
	return strings.HasPrefix(code, "08") // connection_exception class
}

// Counter: UPDATE … RETURNING hands the new value back in the same round
// trip.
func (Dialect) Counter() sqlstore.Counter {
	return sqlstore.Counter{Next: "UPDATE gomogile_counter SET value = value + 1 WHERE name = ? RETURNING value"}
}

// InsertWithNextFid implements sqlstore.FidInserter: the counter's UPDATE
// and the INSERT are one statement, so the counter moves only with a row
// that went in.
func (Dialect) InsertWithNextFid(table string, cols, values []string) (string, bool) {
	return "WITH c AS (UPDATE gomogile_counter SET value = value + 1 WHERE name = ? RETURNING value) INSERT INTO " + table +
		" (fid, " + strings.Join(cols, ", ") + ") SELECT value, " + strings.Join(values, ", ") + " FROM c RETURNING fid, 1", false
}

// ClaimLock: two trackers leasing at once take different rows instead of
// queueing on each other's.
func (Dialect) ClaimLock() string { return " FOR UPDATE SKIP LOCKED" }

// Claim implements sqlstore.Claimer: the due rows' locking read and their
// UPDATE in one statement, so Lease is one round trip. The UPDATE finds the
// rows by fid = ANY(an array of due's fids), an index scan of the primary
// key, where a join with due would have the planner scan and hash the whole
// table (20,000 due rows: 6 ms against 2); due's columns are renamed so that
// the UPDATE's stay unambiguous, and joining the moved rows back to due
// returns them in due's order, which RETURNING alone does not keep.
func (Dialect) Claim(table, where, due, until, cols string) string {
	return "WITH due (due_fid, due_next) AS (" + due + "), moved AS (UPDATE " + table +
		" SET nexttry = " + until + " WHERE fid = ANY (ARRAY(SELECT due_fid FROM due))" + where +
		" RETURNING *) SELECT " + cols + " FROM moved JOIN due ON fid = due_fid ORDER BY due_next, fid"
}
